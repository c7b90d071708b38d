"""Who is calling: the identity an API key stands for. The tenant comes from here, never from a request."""

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Caller:
    key_id: str
    tenant_id: str | None  # None for an admin key
    label: str | None = None

    @property
    def is_admin(self) -> bool:
        return self.tenant_id is None

    @property
    def actor(self) -> str:
        """How the audit trail names this caller."""
        who = self.label or (f"tenant {self.tenant_id}" if self.tenant_id else "admin")
        return f"{who} [key {self.key_id}]"

    def scope(self, requested_tenant: str | None = None) -> str | None:
        """The tenant a query is limited to: a tenant caller's own, whatever it asked for; an admin may
        narrow to one tenant or see all (None)."""
        return requested_tenant if self.is_admin else self.tenant_id

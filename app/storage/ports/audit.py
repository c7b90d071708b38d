"""The dead-letter audit trail (`dead_letter_audit`): who replayed, resolved, discarded or was refused which
dead letter, when, why, and whether for real. Append-only; it outlives the dead letters retention purges."""

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from uuid import UUID


@dataclass(frozen=True, slots=True)
class AuditEntry:
    audit_id: int
    at: datetime
    actor: str
    action: str
    dead_letter_id: int
    message_id: UUID | None
    tenant_id: str | None
    why: str | None
    outcome: str
    dry_run: bool
    request_id: int | None


@dataclass(frozen=True, slots=True)
class NewAuditEntry:
    actor: str
    action: str
    dead_letter_id: int
    message_id: UUID | None
    tenant_id: str | None
    outcome: str
    dry_run: bool
    why: str | None = None
    request_id: int | None = None  # the replay request it is part of
    at: datetime | None = None  # None: the transaction's time


class DeadLetterAudit(Protocol):
    async def add(self, entry: NewAuditEntry) -> None: ...

    async def count_real(self, message_id: UUID, tenant_id: str | None, action: str) -> int:
        """Real (not dry-run) entries of this action for this tenant's message_id, across all its dead letters."""
        ...

    async def entries(self, tenant_id: str | None, dead_letter_id: int | None, limit: int) -> list[AuditEntry]:
        """Newest first; narrowed to a tenant and to a dead letter when given."""
        ...

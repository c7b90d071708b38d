"""Tenants (`tenants`): each tenant's record, tier, status and limits, what it has in flight, and the erasure
of a deleted tenant's records once its retention has passed (app/tenancy/deletion.py says when)."""

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

ACTIVE = "active"
SUSPENDED = "suspended"
DRAINING = "draining"  # phase 1 of a deletion: refused like a suspended tenant, waiting for its payments to settle
DELETED = "deleted"  # phase 2 done: no broker user, binding or queue; records kept until the purge erases them
STATUSES = (ACTIVE, SUSPENDED, DRAINING, DELETED)


@dataclass(frozen=True, slots=True)
class Tenant:
    tenant_id: str
    name: str
    tier: str
    status: str
    default_ttl_seconds: int
    max_message_bytes: int
    publish_rate_per_second: int
    publish_bytes_per_second: int
    max_in_flight: int
    max_bytes_in_flight: int
    dedicated_queue: bool
    retention_days: int | None  # None: the default retention
    created_at: datetime
    deleted_at: datetime | None = None  # when phase 2 of its deletion finished


@dataclass(frozen=True, slots=True)
class InFlight:
    """Payments a tenant had accepted at ingress, not expired, neither booked nor dead-lettered."""

    payments: int
    bytes: int  # their bodies


@dataclass(frozen=True, slots=True)
class Drain:
    """What still keeps a tenant from being deleted."""

    in_flight: InFlight
    unpublished: int  # still in the outbox, expired or not: the relay will publish them
    retrying: int  # messages (direct publishes too) in a retry queue, neither booked nor dead-lettered yet

    @property
    def settled(self) -> bool:
        return not (self.in_flight.payments or self.unpublished or self.retrying)


@dataclass(frozen=True, slots=True)
class TenantLimits:
    """What the consumer holds each tenant to (app/tenancy/directory.py keeps a copy of every tenant's)."""

    tenant_id: str
    status: str
    max_message_bytes: int
    publish_rate_per_second: int
    publish_bytes_per_second: int
    max_in_flight: int
    max_bytes_in_flight: int

    @property
    def active(self) -> bool:
        return self.status == ACTIVE


class Tenants(Protocol):
    async def add(self, tenant_id: str, name: str, tier: str, default_ttl_seconds: int) -> bool:
        """Create the tenant with the default limits; False when it exists already (left as it is)."""
        ...

    async def get(self, tenant_id: str) -> Tenant | None: ...

    async def all(self) -> list[Tenant]:
        """Every tenant, by id."""
        ...

    async def update(self, tenant_id: str, **values: object) -> Tenant | None:
        """Set these columns (tier, status, dedicated_queue, retention_days, a limit); the tenant as it is now,
        or None when there is no such tenant."""
        ...

    async def exists(self, tenant_id: str) -> bool: ...

    async def limits(self, tenant_ids: Collection[str] | None = None) -> list[TenantLimits]:
        """The limits of these tenants that exist (None: of every tenant)."""
        ...

    async def dedicated(self) -> list[str]:
        """The tenants that have a dedicated queue."""
        ...

    async def in_flight(self, tenant_id: str, now: datetime, excluding_batch: str | None = None) -> InFlight:
        """What the tenant has in flight, leaving out one batch (the one being admitted)."""
        ...

    async def drain(self, tenant_id: str, now: datetime) -> Drain: ...

    async def revoke_api_keys(self, tenant_id: str, now: datetime) -> int:
        """Revoke the tenant's API keys still valid; how many."""
        ...

    async def erase(self, tenant_id: str) -> dict[str, int]:
        """Delete every row of the tenant, in every table, and the tenant itself; rows deleted per table."""
        ...

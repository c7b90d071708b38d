"""Each tenant's payments in flight against its limit, counted exactly as ingress and the consumer count
them before they refuse more (app/tenancy/limits.py): the outbox's `in_flight`, the tenant's payments accepted
into the outbox that are not processed, dead-lettered or expired yet.

The consumer's view adds one thing: the direct publishes it is working on right now (at most a batch per
worker, for milliseconds; app/consumer/admission.py), which live only in that process's memory and are not
counted here. A tenant's direct publishes still waiting in a queue are counted by nobody until a worker
takes them; the queue's depth shows them.
"""

from dataclasses import dataclass
from datetime import datetime

from app.storage.unit_of_work import UnitOfWorkFactory


@dataclass(frozen=True, slots=True)
class TenantLoad:
    tenant_id: str
    tier: str
    dedicated_queue: bool
    status: str
    in_flight: int
    limit: int

    @property
    def used(self) -> float:
        """The share of the limit in use (1.0: new batches are refused)."""
        return self.in_flight / self.limit if self.limit else 1.0


async def tenant_loads(uow: UnitOfWorkFactory, tenant_id: str | None, now: datetime) -> list[TenantLoad]:
    """Every tenant's (system scope) or one tenant's own (in its scope, which row-level security holds it to)."""
    async with uow(tenant_id) as u:  # None: the system scope
        if tenant_id is None:
            rows = await u.tenants.all()
        else:
            rows = [row] if (row := await u.tenants.get(tenant_id)) is not None else []
        return [
            TenantLoad(
                tenant_id=r.tenant_id,
                tier=r.tier,
                dedicated_queue=r.dedicated_queue,
                status=r.status,
                in_flight=await u.outbox.in_flight(r.tenant_id, now),
                limit=r.max_in_flight,
            )
            for r in rows
        ]

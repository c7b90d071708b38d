"""What `remit queues list` and the console's queues page show: remit's queues as they are now and each
tenant's payments in flight against its limit; for one tenant, only its own queues and its own count."""

from dataclasses import dataclass
from datetime import datetime

from app.errors import UsageError
from app.messaging.topology import Topology
from app.observability.in_flight import TenantLoad, tenant_loads
from app.observability.live_queues import LiveQueues, QueueWatch
from app.storage.unit_of_work import UnitOfWorkFactory


@dataclass(frozen=True, slots=True)
class QueueOverview:
    live: LiveQueues
    tenants: list[TenantLoad]


def queues_of(topology: Topology, tenant: TenantLoad) -> set[str]:
    """The queues a tenant's payments wait in: its tier's (shared) and its dedicated one, if it has one."""
    own = {topology.dedicated_queue(tenant.tenant_id)} if tenant.dedicated_queue else set()
    return {topology.tier_queue(tenant.tier), *own}


async def queue_overview(
    watch: QueueWatch, uow: UnitOfWorkFactory, tenant_id: str | None, now: datetime
) -> QueueOverview:
    """Every queue and tenant (tenant_id None), or the tenant's own; `uow` must allow that scope."""
    tenants = await tenant_loads(uow, tenant_id, now)
    if tenant_id is not None and not tenants:
        raise UsageError(f"no tenant {tenant_id!r}")
    only = queues_of(watch.topology, tenants[0]) if tenant_id is not None else None
    return QueueOverview(await watch.live(now, only), tenants)


def format_age(seconds: float | None, ready: int) -> str:
    """`-` for an empty queue, `?` when the head's age is unknown, else 42s, 3m05s, 2h03m, 3d04h."""
    if seconds is None:
        return "-" if ready == 0 else "?"
    s = int(seconds)
    for unit, size, sub, sub_size in (("d", 86_400, "h", 3600), ("h", 3600, "m", 60), ("m", 60, "s", 1)):
        if s >= size:
            return f"{s // size}{unit}{(s % size) // sub_size:02d}{sub}"
    return f"{s}s"

"""Worker pool status (what each consumer process reports) and control (the desired state per tier)."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from app.messaging.management import Management
from app.messaging.topology import TIERS, Topology
from app.storage.tables import tenants, worker_heartbeats, worker_pools
from app.storage.unit_of_work import UnitOfWorkFactory

FRESH = timedelta(seconds=15)  # a process that has not reported for this long is gone


@dataclass(frozen=True, slots=True)
class PoolStatus:
    pool: str
    tier: str
    queue: str
    desired_state: str
    processes: int
    workers: int
    running: int
    messages: int
    unacknowledged: int


async def pool_status(
    uow: UnitOfWorkFactory, management: Management, topology: Topology, vhost: str, tenant_id: str | None
) -> list[PoolStatus]:
    """Every pool for an admin (tenant_id None); a tenant sees its tier's pool and its own dedicated one."""
    async with uow() as u:
        since = datetime.now().astimezone() - FRESH
        query = (
            select(
                worker_heartbeats.c.pool,
                worker_heartbeats.c.tier,
                worker_heartbeats.c.queue,
                func.count().label("processes"),
                func.sum(worker_heartbeats.c.workers).label("workers"),
                func.sum(worker_heartbeats.c.running).label("running"),
            )
            .where(worker_heartbeats.c.at > since)
            .group_by(worker_heartbeats.c.pool, worker_heartbeats.c.tier, worker_heartbeats.c.queue)
        )
        live = {row.pool: row for row in await u.connection.execute(query)}
        desired = {r.tier: r.desired_state for r in await u.connection.execute(select(worker_pools))}
        visible = await _visible_pools(u.connection, tenant_id) if tenant_id else None
    names = sorted(set(live) | set(TIERS)) if visible is None else sorted(visible)
    queues = {n: (live[n].queue if n in live else _queue_of(topology, n)) for n in names}
    depths = management.queue_depths(vhost, list(queues.values()))
    return [_status(n, live.get(n), queues[n], desired, depths.get(queues[n], {})) for n in names]


async def _visible_pools(conn: AsyncConnection, tenant_id: str) -> set[str]:
    query = select(tenants.c.tier, tenants.c.dedicated_queue).where(tenants.c.tenant_id == tenant_id)
    row = (await conn.execute(query)).one()
    return {row.tier} | ({f"tenant:{tenant_id}"} if row.dedicated_queue else set())


def _queue_of(topology: Topology, pool: str) -> str:
    return topology.dedicated_queue(pool.split(":", 1)[1]) if pool.startswith("tenant:") else topology.tier_queue(pool)


def _status(name: str, live: object, queue: str, desired: dict[str, str], depth: dict[str, int]) -> PoolStatus:
    tier = "enterprise" if name.startswith("tenant:") else name
    return PoolStatus(
        pool=name,
        tier=tier,
        queue=queue,
        desired_state=desired.get(tier, "running"),
        processes=int(getattr(live, "processes", 0) or 0),
        workers=int(getattr(live, "workers", 0) or 0),
        running=int(getattr(live, "running", 0) or 0),
        messages=depth.get("messages", 0),
        unacknowledged=depth.get("messages_unacknowledged", 0),
    )


async def set_desired_state(uow: UnitOfWorkFactory, tiers: list[str], state: str, actor: str) -> None:
    """Every consumer process applies it within a couple of seconds (its pool sync)."""
    async with uow() as u:
        for tier in tiers:
            statement = insert(worker_pools).values(tier=tier, desired_state=state, updated_by=actor)
            statement = statement.on_conflict_do_update(
                index_elements=["tier"], set_={"desired_state": state, "updated_by": actor, "updated_at": func.now()}
            )
            await u.connection.execute(statement)
        await u.commit()

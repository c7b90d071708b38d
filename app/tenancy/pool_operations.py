"""Worker pools as `remit workers`, the HTTP API and the console all see and drive them: status (what each
consumer process reports, and the pools that should run but have no process) and control (the desired state
per tier, which every consumer process applies within its pool sync)."""

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from app.errors import UsageError
from app.messaging.management import Management
from app.messaging.topology import TIERS, Topology
from app.storage.ports.worker_pools import RUNNING, STOPPED, LivePool
from app.storage.unit_of_work import UnitOfWorkFactory
from app.unknown_values import unknown_value

FRESH = timedelta(seconds=15)  # a process that has not reported for this long is gone
SYNC_SECONDS = 2  # every consumer process applies the desired state within its pool sync
RESTART_PAUSE_SECONDS = 5.0  # long enough for every process to have stopped before it starts again
Action = Literal["start", "stop", "restart"]


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
    paused: int = 0  # processes that paused the pool: their core-banking circuit breaker is open


async def pool_status(
    uow: UnitOfWorkFactory,
    management: Management,
    topology: Topology,
    vhost: str,
    tenant_id: str | None,
    option: str = "tenant",
) -> list[PoolStatus]:
    """Every pool for an admin (tenant_id None); a tenant sees its tier's pool and its own dedicated one.

    `uow` must reach the system scope: pool state is shared infrastructure, which the tenant role cannot
    read at all; what a tenant is shown is filtered here, from its own row read in its own scope."""
    async with uow() as u:
        live = {pool.pool: pool for pool in await u.worker_pools.live(datetime.now().astimezone() - FRESH)}
        desired = await u.worker_pools.desired_states()
    visible = await _visible_pools(uow, tenant_id, option) if tenant_id else None
    names = sorted(set(live) | set(TIERS)) if visible is None else sorted(visible)
    queues = {n: (live[n].queue if n in live else _queue_of(topology, n)) for n in names}
    depths = await asyncio.to_thread(management.queue_depths, vhost, list(queues.values()))
    return [_status(n, live.get(n), queues[n], desired, depths.get(queues[n], {})) for n in names]


async def _visible_pools(uow: UnitOfWorkFactory, tenant_id: str, option: str) -> set[str]:
    async with uow(tenant_id) as u:
        tenant = await u.tenants.get(tenant_id)
    if tenant is None:  # an operator's typo: an API caller's tenant always has its row
        async with uow() as u:
            known = sorted(t.tenant_id for t in await u.tenants.all())
        raise unknown_value(option, tenant_id, known, "a tenant")
    return {tenant.tier} | ({f"tenant:{tenant_id}"} if tenant.dedicated_queue else set())


def _queue_of(topology: Topology, pool: str) -> str:
    return topology.dedicated_queue(pool.split(":", 1)[1]) if pool.startswith("tenant:") else topology.tier_queue(pool)


def _status(name: str, live: LivePool | None, queue: str, desired: dict[str, str], depth: dict[str, int]) -> PoolStatus:
    tier = "enterprise" if name.startswith("tenant:") else name
    return PoolStatus(
        pool=name,
        tier=tier,
        queue=queue,
        desired_state=desired.get(tier, RUNNING),
        processes=live.processes if live else 0,
        workers=live.workers if live else 0,
        running=live.running if live else 0,
        messages=depth.get("messages", 0),
        unacknowledged=depth.get("messages_unacknowledged", 0),
        paused=live.paused if live else 0,
    )


def unmanned(pools: list[PoolStatus]) -> list[PoolStatus]:
    """Pools that should run (desired running) but that no consumer process reported lately: their queue
    is not being consumed."""
    return [p for p in pools if p.desired_state == RUNNING and p.processes == 0]


def tiers_of(tier: str | None, option: str = "tier") -> list[str]:
    """One tier, or every tier when none is named."""
    if tier is not None and tier not in TIERS:
        raise UsageError(f"{option} {tier!r} is not one of {', '.join(TIERS)}")
    return [tier] if tier else list(TIERS)


async def apply_action(
    uow: UnitOfWorkFactory, action: Action, tiers: list[str], actor: str, pause: float = RESTART_PAUSE_SECONDS
) -> str:
    """Set the tiers' desired state; restart = stopped, a pause, running. Returns the state they end in."""
    if action == "restart":
        await set_desired_state(uow, tiers, STOPPED, actor)
        await asyncio.sleep(pause)
    state = STOPPED if action == "stop" else RUNNING
    await set_desired_state(uow, tiers, state, actor)
    return state


async def set_desired_state(uow: UnitOfWorkFactory, tiers: list[str], state: str, actor: str) -> None:
    """Every consumer process applies it within a couple of seconds (its pool sync)."""
    async with uow() as u:
        await u.worker_pools.set_desired_state(tiers, state, actor)
        await u.commit()

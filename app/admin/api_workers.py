"""Worker pools over HTTP: status (a tenant key sees its own tier's pools, an admin key every pool) and
start/stop/restart (admin keys only). The console's workers page uses the same two functions."""

import asyncio
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, status
from pydantic import BaseModel, Field

from app.admin.auth import ApiCaller, Services
from app.admin.caller import Caller
from app.admin.services import AdminServices
from app.errors import UsageError
from app.messaging.connection import vhost_of
from app.messaging.management import Management
from app.messaging.topology import TIERS, Topology
from app.tenancy.workers import PoolStatus, pool_status, set_desired_state

router = APIRouter(prefix="/admin/workers", tags=["workers"])

SYNC_SECONDS = 2  # every consumer process applies the desired state within its pool sync
RESTART_PAUSE_SECONDS = 5.0  # long enough for every process to have stopped before it starts again
Action = Literal["start", "stop", "restart"]


def admin_only(caller: ApiCaller) -> Caller:
    """Operations on shared infrastructure (worker pools, tenants): admin keys only."""
    if not caller.is_admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "only admin keys can do this")
    return caller


AdminCaller = Annotated[Caller, Depends(admin_only)]


class _QueueDepths(Management):
    """Depths read once (off the event loop) and handed to `pool_status`, which asks synchronously."""

    def __init__(self, url: str, depths: dict[str, dict[str, int]]) -> None:
        super().__init__(url)
        self._depths = depths

    def queue_depths(self, vhost: str, names: list[str] | None) -> dict[str, dict[str, int]]:
        return {n: d for n, d in self._depths.items() if names is None or n in names}


async def worker_status(services: AdminServices, caller: Caller) -> list[PoolStatus]:
    """The pools the caller may see: a tenant's tier pool (and its dedicated pool), or every pool."""
    settings = services.settings
    vhost = vhost_of(settings.amqp_url)
    management = Management(settings.rabbitmq_management_url)
    depths = await asyncio.to_thread(management.queue_depths, vhost, None)
    prefetched = _QueueDepths(settings.rabbitmq_management_url, depths)
    topology = Topology.from_settings(settings)
    return await pool_status(services.uow(caller), prefetched, topology, vhost, caller.tenant_id)


def tiers_of(tier: str | None) -> list[str]:
    if tier is not None and tier not in TIERS:
        raise UsageError(f"tier {tier!r} is not one of {', '.join(TIERS)}")
    return [tier] if tier else list(TIERS)


async def apply_action(services: AdminServices, caller: Caller, action: Action, tier: str | None) -> list[str]:
    """Set the desired state of one tier's pools (or all); restart = stopped, a pause, running."""
    if not caller.is_admin:  # the console calls this too
        raise HTTPException(status.HTTP_403_FORBIDDEN, "only admins can start, stop or restart worker pools")
    tiers = tiers_of(tier)
    uow = services.uow(caller)
    if action == "restart":
        await set_desired_state(uow, tiers, "stopped", caller.actor)
        await asyncio.sleep(RESTART_PAUSE_SECONDS)
    await set_desired_state(uow, tiers, "stopped" if action == "stop" else "running", caller.actor)
    return tiers


class PoolView(BaseModel):
    pool: str = Field(description="The tier, or `tenant:<id>` for a dedicated queue's pool.")
    tier: str
    queue: str
    desired_state: str = Field(description="`running` or `stopped`, as set by an admin.")
    processes: int = Field(description="Consumer processes that reported this pool in the last 15 s.")
    workers: int = Field(description="Configured workers (AMQP consumers) across those processes.")
    running: int = Field(description="Workers consuming right now.")
    messages: int = Field(description="Messages in the queue (ready and unacknowledged).")
    unacknowledged: int

    @classmethod
    def of(cls, row: PoolStatus) -> "PoolView":
        return cls(
            pool=row.pool,
            tier=row.tier,
            queue=row.queue,
            desired_state=row.desired_state,
            processes=row.processes,
            workers=row.workers,
            running=row.running,
            messages=row.messages,
            unacknowledged=row.unacknowledged,
        )


class WorkerStatus(BaseModel):
    tenant_id: str | None = Field(description="The tenant the view is limited to; null for an admin key.")
    pools: list[PoolView]


class ActionBody(BaseModel):
    action: Action
    tier: str | None = Field(default=None, description="One tier; all tiers when left out.")


class ActionResult(BaseModel):
    action: Action
    tiers: list[str]
    desired_state: str
    applied_within_seconds: int = SYNC_SECONDS


@router.get("/status")
async def workers_status(caller: ApiCaller, services: Services) -> WorkerStatus:
    """Worker pools with their desired state, live workers and queue depths. A tenant key sees its tier's
    pool (shared with the other tenants of the tier) and its dedicated pool if it has one."""
    rows = await worker_status(services, caller)
    return WorkerStatus(tenant_id=caller.tenant_id, pools=[PoolView.of(r) for r in rows])


@router.post("/action")
async def workers_action(caller: AdminCaller, services: Services, body: ActionBody) -> ActionResult:
    """Admin keys only: start, stop or restart the pools of one tier (or all) in every consumer process.
    Stopping lets in-flight payments finish; queued ones wait in the queue."""
    tiers = await apply_action(services, caller, body.action, body.tier)
    state = "stopped" if body.action == "stop" else "running"
    return ActionResult(action=body.action, tiers=tiers, desired_state=state)

"""Worker pools over HTTP: status (a tenant key sees its own tier's pools, an admin key every pool) and
start/stop/restart (admin keys only). The console's workers page uses the same two functions."""

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from app.admin.auth import ApiCaller, Services
from app.admin.caller import Caller
from app.admin.openapi import errors
from app.admin.services import AdminServices
from app.errors import Forbidden
from app.messaging.topology import Topology
from app.observability.core_breaker import MEANING, breaker_notice
from app.tenancy.pool_operations import SYNC_SECONDS, Action, PoolStatus, apply_action, pool_status, tiers_of

router = APIRouter(prefix="/admin/workers", tags=["workers"])

Tier = Literal["free", "basic", "premium", "enterprise"]  # app/messaging/topology.py TIERS


def admin_only(caller: ApiCaller) -> Caller:
    """Operations on shared infrastructure (worker pools, tenants): admin keys only."""
    if not caller.is_admin:
        raise Forbidden("only admin keys can do this")
    return caller


AdminCaller = Annotated[Caller, Depends(admin_only)]


async def worker_status(services: AdminServices, caller: Caller) -> list[PoolStatus]:
    """The pools the caller may see: a tenant's tier pool (and its dedicated pool), or every pool."""
    topology = Topology.from_settings(services.settings)
    return await pool_status(services.system_uow, services.management, topology, services.vhost, caller.tenant_id)


async def act_for(services: AdminServices, caller: Caller, action: Action, tier: str | None) -> tuple[list[str], str]:
    """Start, stop or restart one tier's pools (or all) for an admin; (the tiers, the state they end in)."""
    if not caller.is_admin:  # the console calls this too
        raise Forbidden("only admins can start, stop or restart worker pools")
    tiers = tiers_of(tier)
    return tiers, await apply_action(services.uow(caller), action, tiers, caller.actor)


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
    paused: int = Field(
        default=0,
        description="Consumer processes that paused this pool because their core-banking circuit breaker is open; "
        "they resume by themselves when the core is ready again.",
    )

    @classmethod
    def of(cls, row: PoolStatus) -> "PoolView":
        return cls(**asdict(row))


class CoreBreakerView(BaseModel):
    processes: int = Field(description="Consumer processes whose core-banking circuit breaker is open.")
    since: datetime | None = Field(description="When the first of them opened (null: not recorded by that process).")
    last_failures: list[str] = Field(
        description="The kinds of failure that opened them (exception class, HTTP status)."
    )
    meaning: str = Field(description="What it means for payments, in words.")
    message: str = Field(description="All of it in one sentence, as the console's banner and `remit status` say it.")


class WorkerStatus(BaseModel):
    tenant_id: str | None = Field(description="The tenant the view is limited to; null for an admin key.")
    pools: list[PoolView]
    core_breaker: CoreBreakerView | None = Field(
        default=None, description="Set while a consumer's core-banking circuit breaker is open: the pools are paused."
    )


class ActionBody(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    action: Action
    tier: Tier | None = Field(default=None, description="One tier; all tiers when left out.")


class ActionResult(BaseModel):
    action: Action
    tiers: list[str]
    desired_state: str
    applied_within_seconds: int = SYNC_SECONDS


@router.get("/status", responses=errors())
async def workers_status(caller: ApiCaller, services: Services) -> WorkerStatus:
    """Worker pools with their desired state, live workers and queue depths. A tenant key sees its tier's
    pool (shared with the other tenants of the tier) and its dedicated pool if it has one. `core_breaker` is set
    while a consumer's core-banking circuit breaker is open (what, since when, what it means)."""
    rows = await worker_status(services, caller)
    now = datetime.now(UTC)
    notice = await breaker_notice(services.system_uow, now)
    breaker = None
    if notice is not None:
        message = notice.describe(now)
        breaker = CoreBreakerView(**asdict(notice), meaning=MEANING, message=message[0].upper() + message[1:])
    return WorkerStatus(tenant_id=caller.tenant_id, pools=[PoolView.of(r) for r in rows], core_breaker=breaker)


@router.post("/action", responses=errors(400, 403, 413))
async def workers_action(caller: AdminCaller, services: Services, body: ActionBody) -> ActionResult:
    """Admin keys only: start, stop or restart the pools of one tier (or all) in every consumer process.
    Stopping lets in-flight payments finish; queued ones wait in the queue."""
    tiers, state = await act_for(services, caller, body.action, body.tier)
    return ActionResult(action=body.action, tiers=tiers, desired_state=state)

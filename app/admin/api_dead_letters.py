"""JSON endpoints for dead letters, scoped to the caller's tenant (an admin key sees every tenant)."""

from typing import Annotated

from fastapi import APIRouter, Query

from app.admin.auth import ApiCaller, Services
from app.admin.dead_letter_ops import discard_for, replay_for, where_for
from app.admin.openapi import DeadLetterIdPath, DeadLetterIdQuery, TenantQuery, errors
from app.admin.schemas import (
    AuditList,
    BatchQuery,
    CurrencyQuery,
    DeadLetterList,
    DiscardBody,
    ReasonQuery,
    ReplayBody,
    SinceQuery,
    StatusQuery,
    UntilQuery,
)
from app.deadletters import operations
from app.deadletters.operations import Discarded, Filters, ReplayReport
from app.deadletters.reasons import OPEN
from app.deadletters.review import DeadLetterDetail, DeadLetterStats
from app.errors import Forbidden

router = APIRouter(prefix="/v1/dead-letters", tags=["dead letters"])


@router.get("", responses=errors())
async def list_(
    caller: ApiCaller,
    services: Services,
    reason: ReasonQuery = None,
    batch: BatchQuery = None,
    currency: CurrencyQuery = None,
    status_: StatusQuery = OPEN,
    since: SinceQuery = None,
    until: UntilQuery = None,
    tenant: TenantQuery = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> DeadLetterList:
    """Dead letters, newest first (open ones unless `status` says otherwise)."""
    where = where_for(caller, Filters(reason, batch, currency, status_, since, until, tenant))
    return DeadLetterList(await operations.find(services.uow(caller), where, limit))


@router.get("/stats", responses=errors())
async def stats(
    caller: ApiCaller,
    services: Services,
    status_: StatusQuery = OPEN,
    tenant: TenantQuery = None,
) -> DeadLetterStats:
    """Counts and value at risk per currency (never summed across currencies) by reason, tenant and age."""
    where = where_for(caller, Filters(status=status_, tenant=tenant))
    return await operations.stats(services.uow(caller), where)


@router.get("/audit", responses=errors())
async def audit(
    caller: ApiCaller,
    services: Services,
    dead_letter_id: DeadLetterIdQuery = None,
    tenant: TenantQuery = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> AuditList:
    """Replay requests (who asked, filters, force, dry run, outcome) and who replayed, resolved, was
    refused or discarded what, when and why (dry runs included, marked)."""
    trail = await operations.audit(services.uow(caller), caller.scope(tenant), dead_letter_id, limit)
    return AuditList(trail.entries, trail.requests)


@router.post("/replay", responses=errors(400, 403, 404, 413))
async def replay(caller: ApiCaller, services: Services, body: ReplayBody) -> ReplayReport:
    """Republish with the same message_id (idempotency prevents a double payment); already processed ones
    are resolved instead. Each outcome says replayed, resolved, refused (with why), or would-... in a dry run.
    `force` needs an admin key (403 otherwise); the request is audited either way."""
    filters = body.filter.filters() if body.filter else None
    return await replay_for(
        services, caller, body.ids, filters, body.all, dry_run=body.dry_run, force=body.force, why=body.why
    )


@router.get("/{dead_letter_id:int}", responses=errors(403, 404))
async def show(
    caller: ApiCaller, services: Services, dead_letter_id: DeadLetterIdPath, unmask: bool = False
) -> DeadLetterDetail:
    """One dead letter in full with its attempt history; account numbers masked unless an admin unmasks."""
    if unmask and not caller.is_admin:
        raise Forbidden("only admin keys can unmask account numbers")
    return await operations.show(services.uow(caller), dead_letter_id, caller.scope(), unmask)


@router.post("/{dead_letter_id:int}/discard", responses=errors(400, 404, 409, 413))
async def discard(
    caller: ApiCaller, services: Services, dead_letter_id: DeadLetterIdPath, body: DiscardBody
) -> Discarded:
    """Mark an open dead letter discarded (never deleted); the reason goes to the audit trail."""
    return await discard_for(services, caller, dead_letter_id, body.reason)

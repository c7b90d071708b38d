"""JSON endpoints for dead letters, scoped to the caller's tenant (an admin key sees every tenant)."""

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status

from app.admin.auth import ApiCaller, Services
from app.admin.dead_letter_ops import Discarded, Filters, ReplayReport, discard_for, parse_status, replay_for
from app.admin.schemas import AuditList, DeadLetterList, DiscardBody, ReplayBody
from app.deadletters.audit import list_audit
from app.deadletters.query import DeadLetterFilter
from app.deadletters.reasons import OPEN
from app.deadletters.review import (
    DeadLetterDetail,
    DeadLetterStats,
    dead_letter_stats,
    list_dead_letters,
    show_dead_letter,
)

router = APIRouter(prefix="/v1/dead-letters", tags=["dead letters"])

TenantQuery = Annotated[str | None, Query(description="Admin keys only: one tenant. Ignored for tenant keys.")]
StatusQuery = Annotated[str, Query(description="open, replayed, resolved, discarded or all.")]


@router.get("")
async def list_(
    caller: ApiCaller,
    services: Services,
    reason: str | None = None,
    batch: str | None = None,
    currency: str | None = None,
    status_: Annotated[str, Query(alias="status", description="open, replayed, resolved, discarded or all.")] = OPEN,
    since: Annotated[str | None, Query(description="ISO 8601 time or an age such as 30m, 2h, 7d.")] = None,
    until: str | None = None,
    tenant: TenantQuery = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
) -> DeadLetterList:
    """Dead letters, newest first (open ones unless `status` says otherwise)."""
    where = Filters(reason, batch, currency, status_, since, until, tenant).for_caller(caller)
    return DeadLetterList(await list_dead_letters(services.uow(caller), where, limit))


@router.get("/stats")
async def stats(
    caller: ApiCaller,
    services: Services,
    status_: Annotated[str, Query(alias="status")] = OPEN,
    tenant: TenantQuery = None,
) -> DeadLetterStats:
    """Counts and value at risk per currency (never summed across currencies) by reason, tenant and age."""
    where = DeadLetterFilter(tenant=caller.scope(tenant), status=parse_status(status_))
    return await dead_letter_stats(services.uow(caller), where)


@router.get("/audit")
async def audit(
    caller: ApiCaller,
    services: Services,
    dead_letter_id: Annotated[int | None, Query(alias="id")] = None,
    tenant: TenantQuery = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> AuditList:
    """Who replayed, resolved or discarded what, when and why (dry runs included, marked)."""
    entries = await list_audit(services.uow(caller), caller.scope(tenant), dead_letter_id, limit)
    return AuditList(entries)


@router.post("/replay")
async def replay(caller: ApiCaller, services: Services, body: ReplayBody) -> ReplayReport:
    """Republish with the same message_id (idempotency prevents a double payment); already processed ones
    are resolved instead. Each outcome says replayed, resolved, refused (with why), or would-... in a dry run."""
    filters = body.filter.filters() if body.filter else None
    return await replay_for(
        services, caller, body.ids, filters, body.all, dry_run=body.dry_run, force=body.force, why=body.why
    )


@router.get("/{dead_letter_id}")
async def show(caller: ApiCaller, services: Services, dead_letter_id: int, unmask: bool = False) -> DeadLetterDetail:
    """One dead letter in full with its attempt history; account numbers masked unless an admin unmasks."""
    if unmask and not caller.is_admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "only admin keys can unmask account numbers")
    return await show_dead_letter(services.uow(caller), dead_letter_id, caller.scope(), unmask)


@router.post("/{dead_letter_id}/discard")
async def discard(caller: ApiCaller, services: Services, dead_letter_id: int, body: DiscardBody) -> Discarded:
    """Mark an open dead letter discarded (never deleted); the reason goes to the audit trail."""
    return await discard_for(services, caller, dead_letter_id, body.reason)

"""Console pages that only read: the dead-letter list (with value at risk), one dead letter, the audit trail."""

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request, status
from starlette.responses import Response

from app.admin.auth import Services
from app.admin.console.context import Console
from app.admin.console.render import page
from app.admin.dead_letter_ops import Filters
from app.deadletters.audit import list_audit
from app.deadletters.reasons import STATUSES
from app.deadletters.review import dead_letter_stats, list_dead_letters, show_dead_letter
from app.errors import UsageError

router = APIRouter(prefix="/console", include_in_schema=False)

Text = Annotated[str, Query(max_length=100)]


@router.get("/dead-letters")
async def dead_letters_page(
    request: Request,
    ctx: Console,
    services: Services,
    reason: Text = "",
    batch: Text = "",
    currency: Text = "",
    status_: Annotated[str, Query(alias="status", max_length=16)] = "open",
    since: Text = "",
    until: Text = "",
    tenant: Text = "",
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Response:
    filters = Filters(reason, batch, currency, status_, since, until, tenant if ctx.caller.is_admin else "")
    error = None
    try:
        where = filters.for_caller(ctx.caller)
    except UsageError as exc:
        error, filters = str(exc), Filters()
        where = filters.for_caller(ctx.caller)
    uow = services.uow(ctx.caller)
    rows = await list_dead_letters(uow, where, limit)
    stats = await dead_letter_stats(uow, where)
    return page(
        request,
        "list.html",
        ctx,
        rows=rows,
        stats=stats,
        filters=filters,
        statuses=(*STATUSES, "all"),
        limit=limit,
        error=error,
    )


@router.get("/dead-letters/{dead_letter_id}")
async def dead_letter_page(
    request: Request, ctx: Console, services: Services, dead_letter_id: int, unmask: bool = False
) -> Response:
    if unmask and not ctx.caller.is_admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "only admins can unmask account numbers")
    detail = await show_dead_letter(services.uow(ctx.caller), dead_letter_id, ctx.caller.scope(), unmask)
    return page(request, "detail.html", ctx, d=detail, s=detail.summary)


@router.get("/audit")
async def audit_page(
    request: Request,
    ctx: Console,
    services: Services,
    dead_letter_id: Annotated[int | None, Query(alias="id")] = None,
    tenant: Text = "",
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> Response:
    scope = ctx.caller.scope(tenant or None)
    entries = await list_audit(services.uow(ctx.caller), scope, dead_letter_id, limit)
    return page(request, "audit.html", ctx, entries=entries, dead_letter_id=dead_letter_id, tenant=tenant)

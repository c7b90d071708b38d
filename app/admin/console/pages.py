"""Console pages that only read: the dead-letter list (with value at risk), one dead letter, the audit trail."""

from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request, status
from starlette.responses import Response

from app.admin.auth import Services
from app.admin.console.context import Console
from app.admin.console.render import page
from app.admin.dead_letter_ops import where_for
from app.deadletters.audit import list_audit
from app.deadletters.operations import Filters, check_known
from app.deadletters.reasons import STATUSES
from app.deadletters.requests import list_requests
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
    uow = services.uow(ctx.caller)
    try:
        where = where_for(ctx.caller, filters)
        await check_known(uow, where)
    except UsageError as exc:
        error, filters = str(exc), Filters()
        where = where_for(ctx.caller, filters)
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
    uow, scope = services.uow(ctx.caller), ctx.caller.scope(tenant or None)
    entries = await list_audit(uow, scope, dead_letter_id, limit)
    requests = [] if dead_letter_id is not None else await list_requests(uow, scope, limit)
    return page(
        request, "audit.html", ctx, entries=entries, requests=requests, dead_letter_id=dead_letter_id, tenant=tenant
    )

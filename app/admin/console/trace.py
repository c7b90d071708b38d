"""The console's payment page: find a payment by message_id, reference or batch row, and see its life."""

from typing import Annotated

from fastapi import APIRouter, Query, Request, status
from starlette.responses import Response

from app.admin.auth import Services
from app.admin.console.context import Console
from app.admin.console.render import page
from app.errors import http_status
from app.tracing.lookup import PaymentQuery
from app.tracing.lookup_errors import AmbiguousPayment, PaymentNotFound
from app.tracing.service import trace_payment

router = APIRouter(prefix="/console", include_in_schema=False)

Text = Annotated[str, Query(max_length=100)]


@router.get("/payments")
async def payment_page(
    request: Request,
    ctx: Console,
    services: Services,
    identifier: Annotated[str, Query(alias="id", max_length=100)] = "",
    row: Annotated[str, Query(max_length=10)] = "",  # text: the form sends an empty field as ""
    tenant: Text = "",
) -> Response:
    asked = {"id": identifier.strip(), "row": row.strip(), "tenant": tenant if ctx.caller.is_admin else ""}
    if not asked["id"]:
        return page(request, "trace.html", ctx, asked=asked, t=None, error=None)
    if asked["row"] and not (asked["row"].isdigit() and int(asked["row"]) > 0):
        error = f"row {asked['row']!r} is not a row number: give the line of the batch's file, 1 or more"
        return page(request, "trace.html", ctx, status.HTTP_422_UNPROCESSABLE_CONTENT, asked=asked, t=None, error=error)
    query = PaymentQuery(asked["id"], int(asked["row"]) if asked["row"] else None)
    scope = ctx.caller.scope(asked["tenant"] or None)
    try:
        core = services.settings.core_banking_label()
        found = await trace_payment(services.uow(ctx.caller), query, scope, services.system_uow, core)
    except (PaymentNotFound, AmbiguousPayment) as exc:
        return page(request, "trace.html", ctx, http_status(exc), asked=asked, t=None, error=str(exc))
    return page(request, "trace.html", ctx, asked=asked, t=found, error=None)

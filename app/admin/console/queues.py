"""The console's queues page: what `remit queues list` shows. An admin sees every queue and every
tenant's payments in flight; a tenant sees its tier's queue (shared with the tier's other tenants) and its
dedicated one, and its own count only (read in its own row-level-security scope)."""

from datetime import datetime

from fastapi import APIRouter, Request
from starlette.responses import Response

from app.admin.auth import Services
from app.admin.console.context import Console
from app.admin.console.render import page
from app.observability.queue_overview import queue_overview

router = APIRouter(prefix="/console", include_in_schema=False)


@router.get("/queues")
async def queues_page(request: Request, ctx: Console, services: Services) -> Response:
    now = datetime.now().astimezone()
    overview = await queue_overview(services.queues, services.uow(ctx.caller), ctx.caller.tenant_id, now)
    return page(request, "queues.html", ctx, overview=overview, now=now)

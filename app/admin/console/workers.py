"""The console's workers page: the pools serving the caller's tier with their state and queue depths; for
an admin every pool, with start/stop/restart (a confirmation step first, like every console action)."""

from datetime import UTC, datetime
from typing import Annotated, cast, get_args

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import RedirectResponse
from pydantic import BaseModel, Field
from starlette.responses import Response

from app.admin.api_workers import act_for, worker_status
from app.admin.auth import Services
from app.admin.console.context import Console
from app.admin.console.forms import session_form
from app.admin.console.render import page
from app.observability.core_breaker import breaker_notice
from app.tenancy.pool_operations import Action, tiers_of

router = APIRouter(prefix="/console", include_in_schema=False)

PAGE = "/console/workers"
ACTIONS: tuple[str, ...] = get_args(Action)
Choice = Annotated[str, Field(max_length=32)]


class ActionForm(BaseModel):
    csrf_token: Annotated[str, Field(max_length=500)] = ""
    action: Choice = ""
    tier: Choice = ""
    step: Choice = "review"


@router.get("/workers")
async def workers_page(request: Request, ctx: Console, services: Services) -> Response:
    pools = await worker_status(services, ctx.caller)
    tiers = sorted({p.tier for p in pools if not p.pool.startswith("tenant:")})
    now = datetime.now(UTC)
    notice = await breaker_notice(services.system_uow, now)
    breaker = notice.describe(now) if notice else None
    return page(request, "workers.html", ctx, pools=pools, tiers=tiers, actions=ACTIONS, breaker=breaker)


@router.post("/workers")
async def workers_action(
    request: Request,
    ctx: Console,
    services: Services,
    form: Annotated[ActionForm, session_form(ActionForm)],
) -> Response:
    ctx.check_csrf(form.csrf_token)
    action, tier = form.action, form.tier
    if not ctx.caller.is_admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "only admins can start, stop or restart worker pools")
    if action not in ACTIONS:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"unknown action {action!r}")
    tiers = tiers_of(tier or None)
    if form.step != "confirm":
        return page(request, "workers_confirm.html", ctx, action=action, tier=tier, tiers=tiers)
    await act_for(services, ctx.caller, cast(Action, action), tier or None)
    ctx.flash(f"Worker pools {', '.join(tiers)}: {action} applied; every consumer process follows within seconds.")
    return RedirectResponse(PAGE, status.HTTP_303_SEE_OTHER)

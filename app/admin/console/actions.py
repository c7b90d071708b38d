"""Console actions that change something: replay (a dry-run preview, then a confirmation that replays
exactly the dead letters the preview showed) and discard (a reason, then a confirmation)."""

from typing import Annotated

from fastapi import APIRouter, Request, status
from fastapi.responses import RedirectResponse
from pydantic import BaseModel
from starlette.responses import Response

from app.admin.auth import Services
from app.admin.console.context import Console, ConsoleContext
from app.admin.console.forms import FormText, session_form
from app.admin.console.render import page
from app.admin.dead_letter_ops import discard_for, replay_for
from app.deadletters.operations import Filters, ReplayReport
from app.deadletters.review import show_dead_letter
from app.errors import CallerError, DeadLetterNotFound

router = APIRouter(prefix="/console", include_in_schema=False)

LIST = "/console/dead-letters"
PREVIEW, CONFIRM = "preview", "confirm"
WILL_ACT = ("would replay", "would resolve")


class ReplayForm(BaseModel):
    csrf_token: FormText = ""
    step: FormText = PREVIEW
    dead_letter_id: int | None = None
    ids: list[int] = []
    reason: FormText = ""
    batch: FormText = ""
    currency: FormText = ""
    tenant: FormText = ""
    since: FormText = ""
    until: FormText = ""
    force: bool = False
    why: FormText = ""


class DiscardForm(BaseModel):
    csrf_token: FormText = ""
    step: FormText = "review"
    reason: FormText = ""


def _detail(dead_letter_id: int) -> str:
    return f"{LIST}/{dead_letter_id}"


def _back(ctx: ConsoleContext, target: str, message: str) -> RedirectResponse:
    ctx.flash(message)
    return RedirectResponse(target, status.HTTP_303_SEE_OTHER)


@router.post("/replay")
async def replay(
    request: Request,
    ctx: Console,
    services: Services,
    form: Annotated[ReplayForm, session_form(ReplayForm)],
) -> Response:
    ctx.check_csrf(form.csrf_token)
    back = _detail(form.dead_letter_id) if form.dead_letter_id is not None else LIST
    if form.step == CONFIRM:
        return await _confirm_replay(ctx, services, form.ids, form.force, form.why, back)
    chosen = [form.dead_letter_id] if form.dead_letter_id is not None else []
    filters = (
        None if chosen else Filters(form.reason, form.batch, form.currency, "open", form.since, form.until, form.tenant)
    )
    try:
        report = await replay_for(
            services, ctx.caller, chosen, filters, False, dry_run=True, force=form.force, why=form.why
        )
    except DeadLetterNotFound:
        raise
    except CallerError as exc:
        return _back(ctx, back, f"Nothing replayed: {exc}")
    confirm_ids = [o.dead_letter_id for o in report.outcomes if o.action in WILL_ACT]
    return page(
        request,
        "replay_preview.html",
        ctx,
        report=report,
        confirm_ids=confirm_ids,
        force=form.force,
        why=form.why,
        back=back,
    )


async def _confirm_replay(
    ctx: ConsoleContext, services: Services, ids: list[int], force: bool, why: str, back: str
) -> Response:
    if not ids:
        return _back(ctx, back, "Nothing to replay.")
    try:
        report = await replay_for(services, ctx.caller, ids, None, False, dry_run=False, force=force, why=why)
    except DeadLetterNotFound:
        raise
    except CallerError as exc:
        return _back(ctx, back, f"Nothing replayed: {exc}")
    return _back(ctx, back, _summary(report))


def _summary(report: ReplayReport) -> str:
    counts = ", ".join(f"{action}: {n}" for action, n in report.summary.items()) or "nothing selected"
    refused = [f"#{o.dead_letter_id}: {o.detail}" for o in report.outcomes if o.action == "refused"]
    return f"Replay done ({counts})." + (f" Refused {'; '.join(refused)}" if refused else "")


@router.post("/dead-letters/{dead_letter_id}/discard")
async def discard(
    request: Request,
    ctx: Console,
    services: Services,
    dead_letter_id: int,
    form: Annotated[DiscardForm, session_form(DiscardForm)],
) -> Response:
    ctx.check_csrf(form.csrf_token)
    reason = form.reason.strip()
    if not reason:
        return _back(ctx, _detail(dead_letter_id), "Say why it is discarded: a reason is required.")
    if form.step != CONFIRM:
        detail = await show_dead_letter(services.uow(ctx.caller), dead_letter_id, ctx.caller.scope())
        return page(request, "discard_confirm.html", ctx, s=detail.summary, reason=reason)
    try:
        await discard_for(services, ctx.caller, dead_letter_id, reason)
    except DeadLetterNotFound:
        raise
    except CallerError as exc:
        return _back(ctx, _detail(dead_letter_id), f"Not discarded: {exc}")
    return _back(ctx, _detail(dead_letter_id), f"Dead letter {dead_letter_id} discarded.")

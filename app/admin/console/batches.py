"""The console's batches: the recent ones with their progress and status reports, one batch in full (per
currency, rows rejected at validation with their errors, each payment with a link to its trace), and a
tenant's upload of a bank file of any format remit reads."""

import tempfile
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, Request, status
from fastapi.responses import RedirectResponse
from starlette.datastructures import UploadFile
from starlette.responses import Response

from app.admin.auth import Services
from app.admin.console.context import Console, ConsoleContext
from app.admin.console.render import page
from app.admin.ingress import Upload, save_part, submit_upload
from app.admin.reports import report_response
from app.admin.services import AdminServices
from app.bankfiles.formats import BankFormat, parse_format
from app.errors import BatchNotFound, UsageError
from app.reporting.batch_pages import batch_page, list_batches
from app.reporting.status_report import ReportChoice

router = APIRouter(prefix="/console", include_in_schema=False)

PAGE = "/console/batches"
PAGE_SIZE = 100
REFRESH_SECONDS = 5  # a batch page reloads itself while payments are in flight (no script: a meta refresh)
MAX_TEXT = 500  # the longest text field kept from the upload form (a CSRF token, a format's name)


@router.get("/batches")
async def batches_page(
    request: Request,
    ctx: Console,
    services: Services,
    tenant: Annotated[str, Query(max_length=32)] = "",
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> Response:
    tenant = tenant if ctx.caller.is_admin else ""
    rows = await list_batches(services.uow(ctx.caller), ctx.caller.scope(tenant or None), limit)
    return page(
        request,
        "batches.html",
        ctx,
        rows=rows,
        tenant=tenant,
        limit=limit,
        formats=list(BankFormat),
        reports=list(ReportChoice),
    )


@router.get("/batches/{correlation_id}")
async def batch_detail_page(
    request: Request,
    ctx: Console,
    services: Services,
    correlation_id: str,
    offset: Annotated[int, Query(ge=0)] = 0,
    tenant: Annotated[str, Query(max_length=32)] = "",  # an admin's: whose direct publishes, when several name it
) -> Response:
    scope = ctx.caller.scope(tenant or None)
    found = await batch_page(services.uow(ctx.caller), correlation_id, scope, PAGE_SIZE, offset)
    if found is None:
        raise BatchNotFound(f"no batch {correlation_id!r}")
    refresh = REFRESH_SECONDS if found.batch.in_flight else None
    return page(
        request,
        "batch.html",
        ctx,
        b=found,
        offset=offset,
        page_size=PAGE_SIZE,
        refresh=refresh,
        tenant=tenant if ctx.caller.is_admin else "",
    )


@router.post("/batches")
async def upload(request: Request, ctx: Console, services: Services) -> Response:
    """The form (a `file` part, `csrf_token`, `format`) is read here, after the session is known: declared
    as parameters, FastAPI would spool the file before checking anyone."""
    async with request.form(max_files=1, max_fields=10) as form:
        ctx.check_csrf(_text(form.get("csrf_token")))
        if ctx.caller.is_admin:
            raise HTTPException(status.HTTP_403_FORBIDDEN, "admins cannot submit batches: log in with the tenant's key")
        file, bank_format = form.get("file"), _text(form.get("format"))
        if not isinstance(file, UploadFile):
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "choose a bank file to upload")
        return await _submit(request, ctx, services, file, bank_format)


def _text(value: object) -> str:
    return value[:MAX_TEXT] if isinstance(value, str) else ""


async def _submit(
    request: Request, ctx: ConsoleContext, services: AdminServices, file: UploadFile, bank_format: str
) -> Response:
    try:
        named = parse_format(bank_format).value if bank_format else None
        with tempfile.TemporaryDirectory(prefix="remit-upload-") as folder:
            path = await save_part(file, Path(folder), services.settings.admin_max_upload_bytes)
            result = await submit_upload(services, ctx.caller, Upload(path.name, path, named), False)
    except UsageError as exc:  # a refused file (nothing accepted), a tenant limit, an unknown format
        ctx.flash(f"Nothing was accepted: {exc}")
        return RedirectResponse(PAGE, status.HTTP_303_SEE_OTHER)
    return page(request, "batch_receipt.html", ctx, r=result, reports=list(ReportChoice))


@router.get("/batches/{correlation_id}/status-report")
async def status_report(
    ctx: Console,
    services: Services,
    correlation_id: str,
    report_format: Annotated[str, Query(alias="format", max_length=32)] = "pain.002",
) -> Response:
    return await report_response(services.uow(ctx.caller), ctx.caller.scope(), correlation_id, report_format)

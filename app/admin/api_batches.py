"""Batch ingress, status and status reports. The tenant of a batch is the API key's, never anything in the
request."""

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Query, Request, status
from starlette.responses import StreamingResponse

from app.admin.auth import ApiCaller, Services, TenantCaller
from app.admin.batch_status import BatchStatus, batch_status, recent_for
from app.admin.ingress import RAW_TYPES, received_upload, submit_upload
from app.admin.openapi import TenantQuery, errors
from app.admin.reports import report_response
from app.bankfiles.formats import FORMAT_NAMES, BankFormat
from app.publisher.bulk_file import ControlTotal
from app.publisher.commands import CurrencyTotal
from app.publisher.validation import Rejection
from app.reporting.status_report import CHOICES, ReportChoice

router = APIRouter(prefix="/v1/batches", tags=["batches"])

# The body is read by hand (multipart or raw), so OpenAPI is told its shapes here.
UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        "format": {"type": "string", "description": f"One of {FORMAT_NAMES}; default: by content."},
                    },
                    "required": ["file"],
                }
            },
            **{media_type: {"schema": {"type": "string", "format": "binary"}} for media_type in RAW_TYPES},
        },
    }
}


@dataclass(frozen=True, slots=True)
class BatchReceipt:
    tenant_id: str
    correlation_id: str
    source_format: str
    accepted: int
    rejected_count: int
    totals: list[CurrencyTotal]  # per currency, never summed across currencies
    rejected: list[Rejection]  # the first rejected rows (Settings.ingest_rejections_listed); the report has all
    controls: list[ControlTotal]


@dataclass(frozen=True, slots=True)
class RecentBatches:
    batches: list[str]


@router.post(
    "", status_code=status.HTTP_201_CREATED, openapi_extra=UPLOAD_BODY, responses=errors(400, 403, 413, 415, 429)
)
async def submit(
    caller: TenantCaller,
    services: Services,
    request: Request,
    filename: Annotated[
        str | None, Query(max_length=255, description="Name of a raw-body upload (default: upload).")
    ] = None,
    bank_format: Annotated[
        str | None,
        Query(
            alias="format",
            json_schema_extra={"enum": [f.value for f in BankFormat]},
            description=f"Read the file as one of {FORMAT_NAMES}; default: by content.",
        ),
    ] = None,
    allow_resubmit: bool = False,
) -> BatchReceipt:
    """Submit a bank file as the key's tenant: multipart part `file`, or the file as the body (text/csv,
    application/x-ndjson, application/xml for pain.001, text/plain or application/octet-stream for anything
    remit reads by content, e.g. ABA). 201 with the accepted count and the first rejected rows; 422 when the
    whole file is refused (nothing is accepted then); 429 over a tenant limit."""
    async with received_upload(request, services.settings.admin_max_upload_bytes, filename, bank_format) as upload:
        result = await submit_upload(services, caller, upload, allow_resubmit)
    return BatchReceipt(
        result.tenant_id,
        result.correlation_id,
        result.source_format,
        result.accepted,
        result.rejected_count,
        result.totals,
        result.rejections,
        result.controls,
    )


@router.get("", responses=errors())
async def recent(
    caller: ApiCaller,
    services: Services,
    tenant: TenantQuery = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
) -> RecentBatches:
    """The caller's most recent batch ids, newest first (files', and those that direct AMQP publishes named)."""
    return RecentBatches(await recent_for(services, caller, tenant, limit))


@router.get("/{correlation_id}", responses=errors(404, 409))
async def show(caller: ApiCaller, services: Services, correlation_id: str, tenant: TenantQuery = None) -> BatchStatus:
    """Per currency: accepted, rejected at validation, processed, dead-lettered, in flight (amounts in
    minor units). A batch of direct AMQP publishes (no file) is the correlation_id they name; 409 when several
    tenants' direct publishes name it and an admin did not say which tenant."""
    return await batch_status(services, caller, correlation_id, tenant)


@router.get(
    "/{correlation_id}/status-report",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/xml": {}, "text/csv": {}, "application/json": {}}}, **errors(404)},
)
async def status_report(
    caller: ApiCaller,
    services: Services,
    correlation_id: str,
    report_format: Annotated[
        str,
        Query(
            alias="format",
            json_schema_extra={"enum": [c.value for c in ReportChoice]},
            description=f"One of {CHOICES}.",
        ),
    ] = "pain.002",
) -> StreamingResponse:
    """Per original transaction: ACSC (booked), RJCT with an ISO reason code, or PDNG (in flight, or held for
    review), with the original group and transaction references. `pain.002` answers in the version matching
    the original pain.001 (.03 for .03, else .10)."""
    return await report_response(services.uow(caller), caller.scope(), correlation_id, report_format)

"""Batch ingress and status. The tenant of a batch is the API key's, never anything in the request."""

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Query, Request, status

from app.admin.auth import ApiCaller, Services, TenantCaller
from app.admin.batches import BatchStatus, batch_status, recent_for
from app.admin.ingress import read_upload, submit_upload
from app.publisher.commands import CurrencyTotal
from app.publisher.validation import ControlTotal, Rejection

router = APIRouter(prefix="/v1/batches", tags=["batches"])

# The body is read by hand (multipart or raw), so OpenAPI is told its shapes here.
UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "properties": {"file": {"type": "string", "format": "binary"}},
                    "required": ["file"],
                }
            },
            "text/csv": {"schema": {"type": "string"}},
            "application/x-ndjson": {"schema": {"type": "string"}},
        },
    }
}


@dataclass(frozen=True, slots=True)
class BatchReceipt:
    tenant_id: str
    correlation_id: str
    accepted: int
    rejected_count: int
    totals: list[CurrencyTotal]  # per currency, never summed across currencies
    rejected: list[Rejection]
    controls: list[ControlTotal]


@dataclass(frozen=True, slots=True)
class RecentBatches:
    batches: list[str]


@router.post("", status_code=status.HTTP_201_CREATED, openapi_extra=UPLOAD_BODY)
async def submit(
    caller: TenantCaller,
    services: Services,
    request: Request,
    filename: Annotated[str | None, Query(description="Name of a raw-body upload (default upload.csv/.jsonl).")] = None,
    allow_resubmit: bool = False,
) -> BatchReceipt:
    """Submit a bulk file (multipart part `file`, or a raw text/csv or application/x-ndjson body) as the
    key's tenant. 201 with the accepted count and rejected rows; 422 when the whole batch is refused."""
    upload = await read_upload(request, services.admin.max_upload_bytes, filename)
    result = await submit_upload(services, caller, upload, allow_resubmit)
    return BatchReceipt(
        result.tenant_id,
        result.correlation_id,
        result.accepted,
        len(result.rejections),
        result.totals,
        result.rejections,
        result.controls,
    )


@router.get("")
async def recent(
    caller: ApiCaller,
    services: Services,
    tenant: Annotated[str | None, Query(description="Admin keys only.")] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
) -> RecentBatches:
    """The caller's most recent batch ids, newest first."""
    return RecentBatches(await recent_for(services, caller, tenant, limit))


@router.get("/{correlation_id}")
async def show(caller: ApiCaller, services: Services, correlation_id: str) -> BatchStatus:
    """Per currency: accepted, rejected at validation, processed, dead-lettered, in flight (amounts in
    minor units)."""
    return await batch_status(services, caller, correlation_id)

"""Where is my payment? `GET /v1/payments/{id}`: one payment's whole life, scoped to the caller's tenant."""

from typing import Annotated

from fastapi import APIRouter, Query

from app.admin.auth import ApiCaller, Services
from app.admin.openapi import INT32_MAX, TenantQuery, errors
from app.known_filters import check_known
from app.tracing.lookup import PaymentQuery
from app.tracing.model import PaymentTrace
from app.tracing.service import trace_payment

router = APIRouter(prefix="/v1/payments", tags=["payments"])


@router.get("/{id:path}", responses=errors(404, 409))
async def trace(
    caller: ApiCaller,
    services: Services,
    id: str,  # the documented name of the path parameter: a message_id, a reference or a batch id
    row: Annotated[
        int | None, Query(ge=1, le=INT32_MAX, description="The row of the batch's file; {id} is then the batch id.")
    ] = None,
    tenant: TenantQuery = None,
) -> PaymentTrace:
    """A payment by message_id, payment_reference, or batch id with `row`: every stage in order with its
    time and the delay since the one before (accepted, published, failed deliveries, dead-lettered,
    replayed or discarded by whom and why, processed with its booking), and what the last reconciliation
    said. Account numbers masked. 404 when the caller's tenant has no such payment (another tenant's reads
    the same); 422 when an admin's `tenant` names no tenant; 409 when the identifier names several (say
    `tenant`, or use the message_id)."""
    query = PaymentQuery(id, row)
    await check_known(services.uow(caller), caller.scope(tenant))
    # Reconciliation runs are shared by every tenant and have no row-level security: they are read in the
    # system scope and the service filters them by the payment's own tenant.
    core = services.settings.core_banking_label()
    return await trace_payment(services.uow(caller), query, caller.scope(tenant), services.system_uow, core)

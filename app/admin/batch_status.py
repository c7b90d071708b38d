"""Batch status for a caller: the per-currency summary of batches in its scope."""

from dataclasses import dataclass

from sqlalchemy import select

from app.admin.caller import Caller
from app.admin.services import AdminServices
from app.errors import BatchNotFound
from app.known_filters import check_known
from app.reporting.batch_summary import SummaryRow, batch_summary, recent_batches
from app.storage.tables import batches


@dataclass(frozen=True, slots=True)
class CurrencyStatus:
    currency: str
    accepted: int
    accepted_cents: int
    rejected: int
    rejected_cents: int
    processed: int
    processed_cents: int
    dead_lettered: int
    dead_lettered_cents: int
    in_flight: int


@dataclass(frozen=True, slots=True)
class BatchStatus:
    correlation_id: str
    tenant_id: str
    settled: bool  # nothing in flight
    currencies: list[CurrencyStatus]


async def batch_status(services: AdminServices, caller: Caller, correlation_id: str) -> BatchStatus:
    uow = services.uow(caller)
    query = select(batches.c.tenant_id).where(batches.c.correlation_id == correlation_id)
    if caller.scope() is not None:
        query = query.where(batches.c.tenant_id == caller.scope())
    async with uow() as u:
        tenant = (await u.connection.execute(query)).scalar_one_or_none()
    if tenant is None:
        raise BatchNotFound(f"no batch {correlation_id!r}")
    currencies = [_currency(r) for r in await batch_summary(uow, [correlation_id])]
    return BatchStatus(correlation_id, tenant, all(c.in_flight == 0 for c in currencies), currencies)


def _currency(row: SummaryRow) -> CurrencyStatus:
    # PostgreSQL's sum() of bigint is numeric: the counts and amounts come back as Decimal.
    numbers = {name: int(getattr(row, name)) for name in CurrencyStatus.__slots__ if name != "currency"}
    return CurrencyStatus(currency=row.currency, **numbers)


async def recent_for(services: AdminServices, caller: Caller, tenant: str | None, limit: int) -> list[str]:
    await check_known(services.uow(caller), caller.scope(tenant))
    return await recent_batches(services.uow(caller), caller.scope(tenant), limit)

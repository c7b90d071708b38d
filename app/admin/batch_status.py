"""Batch status for a caller: the per-currency summary of batches in its scope."""

from dataclasses import dataclass

from sqlalchemy import select

from app.admin.caller import Caller
from app.admin.services import AdminServices
from app.errors import BatchNotFound, Conflict
from app.known_filters import check_known
from app.reporting.batch_summary import SummaryRow, batch_summary, recent_batches
from app.storage.tables import batches
from app.storage.unit_of_work import UnitOfWorkFactory


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


async def batch_status(
    services: AdminServices, caller: Caller, correlation_id: str, tenant: str | None = None
) -> BatchStatus:
    """A batch of the caller's tenant (an admin's: of `tenant`, or of whichever one tenant it is). A batch is its
    correlation_id within its tenant: a file's, or the one direct AMQP publishes name (no file, migration 0016)."""
    uow = services.uow(caller)
    scope = caller.scope(tenant)
    rows = [r for r in await batch_summary(uow, [correlation_id]) if scope in (None, r.tenant_id)]
    owner = await _owner(uow, scope, correlation_id, rows)
    currencies = [_currency(r) for r in rows if r.tenant_id == owner]
    return BatchStatus(correlation_id, owner, all(c.in_flight == 0 for c in currencies), currencies)


async def _owner(uow: UnitOfWorkFactory, scope: str | None, correlation_id: str, rows: list[SummaryRow]) -> str:
    """The tenant whose file the batch is; else the one tenant whose direct publishes name it."""
    query = select(batches.c.tenant_id).where(batches.c.correlation_id == correlation_id)
    if scope is not None:
        query = query.where(batches.c.tenant_id == scope)
    async with uow() as u:
        tenant = (await u.connection.execute(query)).scalar_one_or_none()
    named = sorted({r.tenant_id for r in rows})
    if tenant is not None or len(named) == 1:
        return tenant or named[0]
    if not named:
        raise BatchNotFound(f"no batch {correlation_id!r}")
    raise Conflict(f"direct publishes of {len(named)} tenants name batch {correlation_id!r} ({', '.join(named)}): "
                   "name one with ?tenant=")  # fmt: skip


def _currency(row: SummaryRow) -> CurrencyStatus:
    # PostgreSQL's sum() of bigint is numeric: the counts and amounts come back as Decimal.
    numbers = {name: int(getattr(row, name)) for name in CurrencyStatus.__slots__ if name != "currency"}
    return CurrencyStatus(currency=row.currency, **numbers)


async def recent_for(services: AdminServices, caller: Caller, tenant: str | None, limit: int) -> list[str]:
    await check_known(services.uow(caller), caller.scope(tenant))
    return await recent_batches(services.uow(caller), caller.scope(tenant), limit, with_direct=True)

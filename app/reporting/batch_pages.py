"""A batch as the console shows it: where its file came from, per currency what became of it, the rows
rejected at validation with their errors, and each accepted payment with where it is now.

A payment's state here uses the batch summary's vocabulary (accepted = processed + dead-lettered + in
flight): processed once booked; dead-lettered or discarded by its latest dead letter (a replayed one is
in flight again); otherwise in flight, or still waiting in the outbox to be published.
"""

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime

from app.reporting.batch_summary import SummaryRow, batch_summary, recent_batches
from app.storage.ports.batch_reports import BatchPayment as BatchPayment
from app.storage.ports.batch_reports import BatchRecord
from app.storage.ports.batch_reports import Rejected as Rejected
from app.storage.unit_of_work import UnitOfWorkFactory

DIRECT_SOURCE = "direct AMQP publishes"  # what a batch without a file came as


@dataclass(frozen=True, slots=True)
class BatchListing:
    correlation_id: str
    tenant_id: str
    source_name: str  # the file's name, or DIRECT_SOURCE
    submitted_at: datetime | None  # None: a batch of direct publishes (no file was submitted)
    accepted: int
    rejected: int
    processed: int
    dead_lettered: int

    @property
    def in_flight(self) -> int:
        return self.accepted - self.processed - self.dead_lettered

    @property
    def settled_percent(self) -> int:
        """Payments that reached a terminal state, out of those accepted (counts, not money)."""
        return 100 if not self.accepted else 100 * (self.processed + self.dead_lettered) // self.accepted

    @property
    def direct(self) -> bool:
        return self.submitted_at is None


@dataclass(frozen=True, slots=True)
class BatchPage:
    batch: BatchListing
    source_sha256: str  # "" for a batch of direct publishes
    currencies: list[SummaryRow]  # amounts per currency, never summed across currencies
    rejections: list[Rejected]
    payments: list[BatchPayment]  # one page of them, in file order (direct publishes: as remit recorded them)


async def list_batches(uow_factory: UnitOfWorkFactory, tenant: str | None, limit: int) -> list[BatchListing]:
    """The most recent batches (of one tenant, or of all), newest first, with their progress: files' and those that
    direct AMQP publishes named."""
    return await _listings(uow_factory, await recent_batches(uow_factory, tenant, limit, with_direct=True), tenant)


async def batch_page(
    uow_factory: UnitOfWorkFactory, correlation_id: str, scope: str | None, limit: int, offset: int = 0
) -> BatchPage | None:
    """None when there is no such batch within `scope` (another tenant's batch reads like a missing one), or when
    several tenants' direct publishes name it and `scope` does not say which. `limit` and `offset` page through its
    payments in file order."""
    async with uow_factory() as uow:
        found = await uow.batch_reports.batches([correlation_id], scope)
        rejections = await uow.batch_reports.rejections(correlation_id) if found else []
    summary = [_whole(c) for c in await batch_summary(uow_factory, [correlation_id]) if scope in (None, c.tenant_id)]
    tenants = {found[0].tenant_id} if found else {c.tenant_id for c in summary}
    if len(tenants) != 1:
        return None
    [tenant] = tenants
    currencies = [c for c in summary if c.tenant_id == tenant]
    async with uow_factory() as uow:
        payments = await uow.batch_reports.payments(correlation_id, tenant, limit, offset, direct=not found)
    return BatchPage(
        batch=_listing(found[0], currencies) if found else _direct(correlation_id, tenant, currencies),
        source_sha256=found[0].source_sha256 if found else "",
        currencies=currencies,
        rejections=rejections,
        payments=payments,
    )


async def _listings(
    uow_factory: UnitOfWorkFactory, correlation_ids: Sequence[str], scope: str | None
) -> list[BatchListing]:
    """One listing per batch: a file's, and one per tenant whose direct publishes name the id without a file of its
    own (a batch is its correlation_id within its tenant)."""
    if not correlation_ids:
        return []
    summary = [r for r in await batch_summary(uow_factory, correlation_ids) if scope in (None, r.tenant_id)]
    async with uow_factory() as uow:
        files = {(b.correlation_id, b.tenant_id): b for b in await uow.batch_reports.batches(correlation_ids, scope)}
    listings = []
    for c in correlation_ids:
        rows = [r for r in summary if r.correlation_id == c]
        for tenant in sorted({t for (cid, t) in files if cid == c} | {r.tenant_id for r in rows}):
            mine = [r for r in rows if r.tenant_id == tenant]
            file = files.get((c, tenant))
            listings.append(_listing(file, mine) if file else _direct(c, tenant, mine))
    return listings


def _whole(row: SummaryRow) -> SummaryRow:
    """PostgreSQL's sum() of bigint is numeric: the counts and amounts come back as Decimal."""
    counts = {k: int(v) for k, v in asdict(row).items() if k not in {"tenant_id", "correlation_id", "currency"}}
    return SummaryRow(row.tenant_id, row.correlation_id, row.currency, **counts)


def _listing(row: BatchRecord, currencies: Sequence[SummaryRow]) -> BatchListing:
    """Counts of payments add up across currencies (amounts never do)."""
    return BatchListing(
        row.correlation_id,
        row.tenant_id,
        row.source_name,
        row.submitted_at,
        accepted=row.accepted_count,
        rejected=row.rejected_count,
        processed=sum(int(c.processed) for c in currencies),
        dead_lettered=sum(int(c.dead_lettered) for c in currencies),
    )


def _direct(correlation_id: str, tenant: str, currencies: Sequence[SummaryRow]) -> BatchListing:
    """A batch of direct publishes: what the consumer received, booked and dead-lettered (no file, no rejections)."""
    return BatchListing(
        correlation_id,
        tenant,
        DIRECT_SOURCE,
        None,
        accepted=sum(int(c.accepted) for c in currencies),
        rejected=0,
        processed=sum(int(c.processed) for c in currencies),
        dead_lettered=sum(int(c.dead_lettered) for c in currencies),
    )

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


@dataclass(frozen=True, slots=True)
class BatchListing:
    correlation_id: str
    tenant_id: str
    source_name: str
    submitted_at: datetime
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


@dataclass(frozen=True, slots=True)
class BatchPage:
    batch: BatchListing
    source_sha256: str
    currencies: list[SummaryRow]  # amounts per currency, never summed across currencies
    rejections: list[Rejected]
    payments: list[BatchPayment]  # one page of them, in file order


async def list_batches(uow_factory: UnitOfWorkFactory, tenant: str | None, limit: int) -> list[BatchListing]:
    """The most recent batches (of one tenant, or of all), newest first, with their progress."""
    return await _listings(uow_factory, await recent_batches(uow_factory, tenant, limit))


async def batch_page(
    uow_factory: UnitOfWorkFactory, correlation_id: str, scope: str | None, limit: int, offset: int = 0
) -> BatchPage | None:
    """None when there is no such batch within `scope` (another tenant's batch reads like a missing one).
    `limit` and `offset` page through its payments in file order."""
    async with uow_factory() as uow:
        found = await uow.batch_reports.batches([correlation_id], scope)
        if not found:
            return None
        batch = found[0]
        rejections = await uow.batch_reports.rejections(correlation_id)
        payments = await uow.batch_reports.payments(correlation_id, batch.tenant_id, limit, offset)
    currencies = [_whole(c) for c in await batch_summary(uow_factory, [correlation_id])]
    return BatchPage(
        batch=_listing(batch, currencies),
        source_sha256=batch.source_sha256,
        currencies=currencies,
        rejections=rejections,
        payments=payments,
    )


async def _listings(uow_factory: UnitOfWorkFactory, correlation_ids: Sequence[str]) -> list[BatchListing]:
    if not correlation_ids:
        return []
    summary = await batch_summary(uow_factory, correlation_ids)
    async with uow_factory() as uow:
        meta = {b.correlation_id: b for b in await uow.batch_reports.batches(correlation_ids)}
    return [_listing(meta[c], [r for r in summary if r.correlation_id == c]) for c in correlation_ids if c in meta]


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

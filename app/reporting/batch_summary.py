"""Per batch and currency: what was accepted, rejected at validation, processed, dead-lettered, in flight."""

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text

from app.storage.unit_of_work import UnitOfWorkFactory

_SUMMARY = text(
    """
    WITH acc AS (
        SELECT correlation_id, currency, accepted_count AS n, accepted_cents AS cents
        FROM batch_totals WHERE correlation_id = ANY(:batches)
    ), rej AS (
        SELECT correlation_id, coalesce(currency, '?') AS currency, count(*) AS n,
               coalesce(sum(amount_cents), 0) AS cents
        FROM batch_rejections WHERE correlation_id = ANY(:batches) GROUP BY 1, 2
    ), done AS (
        SELECT correlation_id, currency, count(*) AS n, sum(amount_cents) AS cents
        FROM ledger WHERE correlation_id = ANY(:batches) GROUP BY 1, 2
    ), dead AS (
        SELECT o.correlation_id, o.currency, count(*) AS n, sum(o.amount_cents) AS cents
        FROM outbox o
        WHERE o.correlation_id = ANY(:batches)
          AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.message_id = o.message_id)
          AND EXISTS (SELECT 1 FROM dead_letters d WHERE d.message_id = o.message_id
                      AND d.status IN ('open', 'discarded'))
        GROUP BY 1, 2
    )
    SELECT b.tenant_id, k.correlation_id, k.currency,
           coalesce(acc.n, 0) AS accepted, coalesce(acc.cents, 0) AS accepted_cents,
           coalesce(rej.n, 0) AS rejected, coalesce(rej.cents, 0) AS rejected_cents,
           coalesce(done.n, 0) AS processed, coalesce(done.cents, 0) AS processed_cents,
           coalesce(dead.n, 0) AS dead_lettered, coalesce(dead.cents, 0) AS dead_lettered_cents
    FROM (SELECT correlation_id, currency FROM acc UNION SELECT correlation_id, currency FROM rej) k
    JOIN batches b USING (correlation_id)
    LEFT JOIN acc USING (correlation_id, currency)
    LEFT JOIN rej USING (correlation_id, currency)
    LEFT JOIN done USING (correlation_id, currency)
    LEFT JOIN dead USING (correlation_id, currency)
    ORDER BY b.tenant_id, k.correlation_id, k.currency
    """
)


@dataclass(frozen=True, slots=True)
class SummaryRow:
    tenant_id: str
    correlation_id: str
    currency: str
    accepted: int
    accepted_cents: int
    rejected: int
    rejected_cents: int
    processed: int
    processed_cents: int
    dead_lettered: int
    dead_lettered_cents: int

    @property
    def in_flight(self) -> int:
        return self.accepted - self.processed - self.dead_lettered


async def batch_summary(uow_factory: UnitOfWorkFactory, correlation_ids: Sequence[str]) -> list[SummaryRow]:
    async with uow_factory() as uow:
        rows = await uow.connection.execute(_SUMMARY, {"batches": list(correlation_ids)})
        return [SummaryRow(**row._mapping) for row in rows]


async def recent_batches(uow_factory: UnitOfWorkFactory, tenant_id: str | None, limit: int) -> list[str]:
    query = text(
        "SELECT correlation_id FROM batches WHERE (CAST(:t AS text) IS NULL OR tenant_id = :t) "
        "ORDER BY submitted_at DESC LIMIT :n"
    )
    async with uow_factory() as uow:
        return list((await uow.connection.execute(query, {"t": tenant_id, "n": limit})).scalars())

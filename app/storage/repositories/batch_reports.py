"""Batch reports in PostgreSQL."""

from collections.abc import Sequence

from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.ports.batch_reports import BatchPayment, BatchRecord, Rejected, SummaryRow
from app.storage.tables import batch_rejections, batches

# Keyed by tenant, batch and currency: a batch is its correlation_id within its tenant, and payments published
# directly over AMQP (no file; the consumer's record of each is its acceptance, migration 0016, or its dead letters
# until it is booked) form a batch of their publisher's tenant under the correlation_id they name, whichever tenant's
# file used that id too.
_SUMMARY = text(
    """
    WITH acc AS (
        SELECT t.tenant_id, t.correlation_id, t.currency, t.accepted_count AS n, t.accepted_cents AS cents
        FROM batch_totals t WHERE t.correlation_id = ANY(:batches)
    ), rej AS (
        SELECT b.tenant_id, r.correlation_id, coalesce(r.currency, '?') AS currency, count(*) AS n,
               coalesce(sum(r.amount_cents), 0) AS cents
        FROM batch_rejections r JOIN batches b USING (correlation_id)
        WHERE r.correlation_id = ANY(:batches) GROUP BY 1, 2, 3
    ), amqp AS (
        -- A direct publish is recorded when it is booked: accepted and processed at once.
        SELECT tenant_id, correlation_id, currency, count(*) AS n, sum(amount_cents) AS cents
        FROM processed_messages WHERE source = 'amqp' AND correlation_id = ANY(:batches) GROUP BY 1, 2, 3
    ), amqp_dead AS (
        -- A direct publish that was dead-lettered is accepted too (the consumer received it), and its dead letters are
        -- its only record until it is booked: dead-lettered while its latest is open or discarded, in flight again
        -- once replayed. A payment of the outbox (a file's) is counted from there; a booked one by `amqp`.
        SELECT tenant_id, correlation_id, coalesce(currency, '?') AS currency, count(*) AS n,
               coalesce(sum(amount_cents), 0) AS cents,
               count(*) FILTER (WHERE status IN ('open', 'discarded')) AS dead_n,
               coalesce(sum(amount_cents) FILTER (WHERE status IN ('open', 'discarded')), 0) AS dead_cents
        FROM (
            SELECT DISTINCT ON (d.tenant_id, d.message_id) d.tenant_id, d.correlation_id, d.currency,
                   d.amount_cents, d.status
            FROM dead_letters d
            WHERE d.correlation_id = ANY(:batches) AND d.tenant_id IS NOT NULL AND d.message_id IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.tenant_id = d.tenant_id AND o.message_id = d.message_id)
              AND NOT EXISTS (SELECT 1 FROM processed_messages p
                              WHERE p.tenant_id = d.tenant_id AND p.message_id = d.message_id)
            ORDER BY d.tenant_id, d.message_id, d.dead_letter_id DESC
        ) latest
        GROUP BY 1, 2, 3
    ), done AS (
        SELECT o.tenant_id, o.correlation_id, o.currency, count(*) AS n, sum(o.amount_cents) AS cents
        FROM outbox o JOIN ledger l ON l.tenant_id = o.tenant_id AND l.message_id = o.message_id
        WHERE o.correlation_id = ANY(:batches) GROUP BY 1, 2, 3
    ), dead AS (
        SELECT o.tenant_id, o.correlation_id, o.currency, count(*) AS n, sum(o.amount_cents) AS cents
        FROM outbox o
        WHERE o.correlation_id = ANY(:batches)
          AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.tenant_id = o.tenant_id AND l.message_id = o.message_id)
          AND EXISTS (SELECT 1 FROM dead_letters d WHERE d.tenant_id = o.tenant_id AND d.message_id = o.message_id
                      AND d.status IN ('open', 'discarded'))
        GROUP BY 1, 2, 3
    ), k AS (
        SELECT tenant_id, correlation_id, currency FROM acc
        UNION SELECT tenant_id, correlation_id, currency FROM rej
        UNION SELECT tenant_id, correlation_id, currency FROM amqp
        UNION SELECT tenant_id, correlation_id, currency FROM amqp_dead
    )
    SELECT k.tenant_id, k.correlation_id, k.currency,
           coalesce(acc.n, 0) + coalesce(amqp.n, 0) + coalesce(amqp_dead.n, 0) AS accepted,
           coalesce(acc.cents, 0) + coalesce(amqp.cents, 0) + coalesce(amqp_dead.cents, 0) AS accepted_cents,
           coalesce(rej.n, 0) AS rejected, coalesce(rej.cents, 0) AS rejected_cents,
           coalesce(done.n, 0) + coalesce(amqp.n, 0) AS processed,
           coalesce(done.cents, 0) + coalesce(amqp.cents, 0) AS processed_cents,
           coalesce(dead.n, 0) + coalesce(amqp_dead.dead_n, 0) AS dead_lettered,
           coalesce(dead.cents, 0) + coalesce(amqp_dead.dead_cents, 0) AS dead_lettered_cents,
           coalesce(amqp.n, 0) + coalesce(amqp_dead.n, 0) AS amqp,
           coalesce(amqp.cents, 0) + coalesce(amqp_dead.cents, 0) AS amqp_cents
    FROM k
    LEFT JOIN acc USING (tenant_id, correlation_id, currency)
    LEFT JOIN rej USING (tenant_id, correlation_id, currency)
    LEFT JOIN amqp USING (tenant_id, correlation_id, currency)
    LEFT JOIN amqp_dead USING (tenant_id, correlation_id, currency)
    LEFT JOIN done USING (tenant_id, correlation_id, currency)
    LEFT JOIN dead USING (tenant_id, correlation_id, currency)
    ORDER BY k.tenant_id, k.correlation_id, k.currency
    """
)
_RECENT = text(
    "SELECT correlation_id FROM batches WHERE (CAST(:t AS text) IS NULL OR tenant_id = :t) "
    "ORDER BY submitted_at DESC LIMIT :n"
)
# The same with the correlation_ids that direct publishes named (booked or dead-lettered), newest first by their latest
# record.
_RECENT_WITH_DIRECT = text(
    """
    SELECT correlation_id FROM (
        SELECT correlation_id, submitted_at AS at FROM batches WHERE CAST(:t AS text) IS NULL OR tenant_id = :t
        UNION ALL
        SELECT correlation_id, processed_at FROM processed_messages
        WHERE source = 'amqp' AND (CAST(:t AS text) IS NULL OR tenant_id = :t)
        UNION ALL
        SELECT d.correlation_id, d.last_failed_at FROM dead_letters d
        WHERE d.correlation_id IS NOT NULL AND d.tenant_id IS NOT NULL
          AND (CAST(:t AS text) IS NULL OR d.tenant_id = :t)
          AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.tenant_id = d.tenant_id AND o.message_id = d.message_id)
    ) seen GROUP BY correlation_id ORDER BY max(at) DESC LIMIT :n
    """
)

# A payment's state in the batch summary's vocabulary (app/storage/ports/batch_reports.py: BatchPayment).
_PAYMENTS = text(
    """
    SELECT o.row_number, o.seq, o.message_id, o.payment_reference, o.amount_cents, o.currency, o.published_at,
           CASE WHEN EXISTS (SELECT 1 FROM ledger l
                             WHERE l.tenant_id = o.tenant_id AND l.message_id = o.message_id) THEN 'processed'
                WHEN dl.status = 'open' THEN 'dead-lettered (' || dl.reason || ')'
                WHEN dl.status = 'discarded' THEN 'discarded (' || dl.reason || ')'
                WHEN o.published_at IS NULL THEN 'waiting in the outbox'
                ELSE 'in flight'
           END AS state
    FROM outbox o
    LEFT JOIN LATERAL (
        SELECT d.status, d.reason FROM dead_letters d
        WHERE d.tenant_id = o.tenant_id AND d.message_id = o.message_id
        ORDER BY d.dead_letter_id DESC LIMIT 1
    ) dl ON true
    WHERE o.correlation_id = :batch AND o.tenant_id = :tenant
    ORDER BY o.seq
    LIMIT :limit OFFSET :offset
    """
)
# A batch of direct publishes has no file: its payments are what its tenant's consumer booked and those only their dead
# letters record (the latest of each), in the same vocabulary, in the order remit first recorded them (seq).
_DIRECT_PAYMENTS = text(
    """
    SELECT NULL::int AS row_number, row_number() OVER (ORDER BY at, message_id)::int AS seq, message_id,
           payment_reference, amount_cents, currency, NULL::timestamptz AS published_at, state
    FROM (
        SELECT l.message_id, l.payment_reference, l.amount_cents, l.currency, l.booked_at AS at, 'processed' AS state
        FROM processed_messages p JOIN ledger l ON l.tenant_id = p.tenant_id AND l.message_id = p.message_id
        WHERE p.source = 'amqp' AND p.correlation_id = :batch AND p.tenant_id = :tenant
        UNION ALL
        SELECT * FROM (
            SELECT DISTINCT ON (d.message_id) d.message_id, coalesce(d.payment_reference, ''),
                   coalesce(d.amount_cents, 0), coalesce(d.currency, '?'), d.first_failed_at,
                   CASE d.status WHEN 'open' THEN 'dead-lettered (' || d.reason || ')'
                                 WHEN 'discarded' THEN 'discarded (' || d.reason || ')'
                                 ELSE 'in flight' END
            FROM dead_letters d
            WHERE d.correlation_id = :batch AND d.tenant_id = :tenant AND d.message_id IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.tenant_id = d.tenant_id AND o.message_id = d.message_id)
              AND NOT EXISTS (SELECT 1 FROM processed_messages p
                              WHERE p.tenant_id = d.tenant_id AND p.message_id = d.message_id)
            ORDER BY d.message_id, d.dead_letter_id DESC
        ) dead
    ) direct
    ORDER BY seq
    LIMIT :limit OFFSET :offset
    """
)
br = batch_rejections.c


class SqlBatchReports:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def summary(self, correlation_ids: Sequence[str]) -> list[SummaryRow]:
        rows = await self._connection.execute(_SUMMARY, {"batches": list(correlation_ids)})
        return [SummaryRow(**row._mapping) for row in rows]

    async def recent(self, tenant_id: str | None, limit: int, with_direct: bool = False) -> list[str]:
        query = _RECENT_WITH_DIRECT if with_direct else _RECENT
        return list((await self._connection.execute(query, {"t": tenant_id, "n": limit})).scalars())

    async def batches(self, correlation_ids: Sequence[str], tenant_id: str | None = None) -> list[BatchRecord]:
        query = select(batches).where(batches.c.correlation_id.in_(list(correlation_ids)))
        if tenant_id is not None:
            query = query.where(batches.c.tenant_id == tenant_id)
        return [BatchRecord(**row._mapping) for row in await self._connection.execute(query)]

    async def rejections(self, correlation_id: str) -> list[Rejected]:
        query = (
            select(br.row_number, br.payment_reference, br.currency, br.amount_cents, br.errors)
            .where(br.correlation_id == correlation_id)
            .order_by(br.row_number)
        )
        return [Rejected(*row) for row in await self._connection.execute(query)]

    async def payments(
        self, correlation_id: str, tenant_id: str, limit: int, offset: int, direct: bool = False
    ) -> list[BatchPayment]:
        bounds = {"batch": correlation_id, "tenant": tenant_id, "limit": limit, "offset": offset}
        query = _DIRECT_PAYMENTS if direct else _PAYMENTS
        return [BatchPayment(**row._mapping) for row in await self._connection.execute(query, bounds)]

"""A batch's status report lines in PostgreSQL: collected into a temporary table (dropped at the end of the
transaction), counted there, then streamed from it through a server-side cursor."""

from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.ports.report_lines import LineKind, ReportLine

_FETCH_ROWS = 2_000
_CREATE = text(
    """
    CREATE TEMPORARY TABLE report_lines (
        row_number integer, seq integer, block text, instruction text, reference text, booked boolean,
        dl_status text, dl_reason text, dl_error text, dl_detail text, rejected_as text, errors jsonb
    ) ON COMMIT DROP
    """
)
# The dead letter that counts is the latest of the payment's own (same tenant): a replay that failed again
# has a newer one. Joined on tenant_id too, so that a message_id another tenant reused cannot speak for it.
_COLLECT = text(
    """
    INSERT INTO report_lines
    SELECT o.row_number, o.seq, o.payment_information_id, o.instruction_id, o.payment_reference,
           EXISTS (SELECT 1 FROM ledger l WHERE l.message_id = o.message_id AND l.tenant_id = o.tenant_id),
           d.status, d.reason, d.error_type, d.error_message, NULL, NULL
    FROM outbox o
    LEFT JOIN LATERAL (
        SELECT status, reason, error_type, error_message FROM dead_letters d
        WHERE d.message_id = o.message_id AND d.tenant_id = o.tenant_id
        ORDER BY d.dead_letter_id DESC LIMIT 1
    ) d ON true
    WHERE o.correlation_id = :batch
    UNION ALL
    SELECT r.row_number, NULL, r.payment_information_id, r.instruction_id, r.payment_reference, false,
           NULL, NULL, NULL, NULL, r.outcome, r.errors
    FROM batch_rejections r WHERE r.correlation_id = :batch
    """
)
_COUNTS = text(
    "SELECT booked, dl_status, dl_reason, dl_error, rejected_as, count(*) AS n FROM report_lines GROUP BY 1, 2, 3, 4, 5"
)
# File order, which is payment-information order: a pain.001's PmtInf blocks are contiguous.
_LINES = text("SELECT * FROM report_lines ORDER BY row_number NULLS FIRST, seq")


class SqlReportLines:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def collect(self, correlation_id: str) -> dict[LineKind, int]:
        await self._connection.execute(_CREATE)
        await self._connection.execute(_COLLECT, {"batch": correlation_id})
        return {_kind(row): int(row.n) for row in await self._connection.execute(_COUNTS)}

    async def each(self, consume: Callable[[Iterator[ReportLine]], None]) -> None:
        await self._connection.run_sync(lambda sync: consume(_lines(sync)))


def _lines(conn: Connection) -> Iterator[ReportLine]:
    for row in conn.execution_options(stream_results=True, yield_per=_FETCH_ROWS).execute(_LINES):
        yield ReportLine(
            _kind(row), row.row_number, row.seq, row.block, row.instruction, row.reference, row.dl_detail, row.errors
        )


def _kind(row: Any) -> LineKind:
    return LineKind(row.booked, row.dl_status, row.dl_reason, row.dl_error, row.rejected_as)

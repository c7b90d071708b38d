"""In-memory status report lines, gathered from the fake outbox, ledger, dead letters and batches."""

from collections import Counter
from collections.abc import Callable, Iterator

from app.storage.ports.report_lines import LineKind, ReportLine
from tests.fakes.batch_reports import TABLE as BATCHES
from tests.fakes.batch_reports import BatchRow
from tests.fakes.database import FakeTransaction
from tests.fakes.dead_letters import latest_dead_letter
from tests.fakes.ledger import TABLE as LEDGER
from tests.fakes.outbox import TABLE as OUTBOX
from tests.fakes.outbox import OutboxRow


class FakeReportLines:
    def __init__(self, tx: FakeTransaction) -> None:
        self._tx = tx
        self._lines: list[ReportLine] = []

    async def collect(self, correlation_id: str) -> dict[LineKind, int]:
        outbox: list[OutboxRow] = self._tx.rows(OUTBOX)
        batch: BatchRow | None = self._tx.get(BATCHES, correlation_id)
        self._lines = [self._accepted(o) for o in outbox if o.correlation_id == correlation_id]
        self._lines += [
            ReportLine(
                LineKind(False, None, None, None, r.outcome),
                r.row_number,
                None,
                r.payment_information_id,
                r.instruction_id,
                r.payment_reference,
                None,
                r.errors,
            )
            for r in (batch.rejections if batch else [])
        ]
        return dict(Counter(line.kind for line in self._lines))

    async def each(self, consume: Callable[[Iterator[ReportLine]], None]) -> None:
        consume(iter(sorted(self._lines, key=_file_order)))

    def _accepted(self, o: OutboxRow) -> ReportLine:
        booked = self._tx.get(LEDGER, (o.tenant_id, o.message_id)) is not None
        dl = latest_dead_letter(self._tx, o.tenant_id, o.message_id)
        kind = LineKind(
            booked,
            dl.status if dl else None,
            dl.reason if dl else None,
            dl.error_type if dl else None,
            None,
        )
        return ReportLine(
            kind,
            o.row_number,
            o.seq,
            o.payment_information_id,
            o.instruction_id,
            o.payment_reference,
            dl.error_message if dl else None,
            None,
        )


def _file_order(line: ReportLine) -> tuple[bool, int, bool, int]:
    """As PostgreSQL orders them: row_number NULLS FIRST, then seq (NULLS LAST)."""
    return (line.row_number is not None, line.row_number or 0, line.seq is None, line.seq or 0)

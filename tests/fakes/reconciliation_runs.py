"""In-memory reconciliation runs and breaks. Tests record runs with `recorded` (the job writes them itself)."""

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from app.storage.ports.reconciliation_runs import Break, RunRecord
from tests.fakes.database import FakeDatabase, FakeTransaction

RUNS, BREAKS = "reconciliation_runs", "reconciliation_breaks"


@dataclass(frozen=True, slots=True)
class BreakRow:
    """No tenant_id of its own: like the real tables, these have no row-level security."""

    run_id: UUID
    entry: Break


def recorded(db: FakeDatabase, run: RunRecord, breaks: Sequence[Break]) -> None:
    db.tables[RUNS][run.run_id] = run
    for entry in breaks:
        key = (run.run_id, entry.tenant_id, entry.message_id, entry.correlation_id, entry.currency)
        db.tables[BREAKS][key] = BreakRow(run.run_id, entry)


class FakeReconciliationRuns:
    def __init__(self, tx: FakeTransaction) -> None:
        self._tx = tx

    async def latest(self, limit: int) -> list[RunRecord]:
        runs: list[RunRecord] = self._tx.rows(RUNS)
        return sorted(runs, key=lambda r: r.as_of, reverse=True)[:limit]

    async def get(self, run_id: UUID) -> RunRecord | None:
        run: RunRecord | None = self._tx.get(RUNS, run_id)
        return run

    async def breaks(self, run_id: UUID, tenant_id: str | None, limit: int) -> list[Break]:
        found = [b.entry for b in self._rows() if b.run_id == run_id]
        mine = [b for b in found if tenant_id is None or b.tenant_id == tenant_id]
        # As PostgreSQL orders them: NULLs (a batch's control totals) after the messages.
        return sorted(mine, key=lambda b: (b.first_seen_at, b.message_id is None, str(b.message_id)))[:limit]

    async def break_counts(self, run_ids: Sequence[UUID], tenant_id: str) -> dict[UUID, int]:
        return dict(Counter(b.run_id for b in self._rows() if b.run_id in run_ids and b.entry.tenant_id == tenant_id))

    def _rows(self) -> list[BreakRow]:
        rows: list[BreakRow] = self._tx.rows(BREAKS)
        return rows

"""Reconciliation runs and their breaks, as the console shows them.

A run covers every tenant. An operator (scope None) sees its totals; a tenant sees only when it ran and
its own breaks, never the run's totals or result, which count other tenants' payments. The tables carry
no row-level security (the job copies its breaks in, which PostgreSQL refuses on a table with policies):
the tenant filter is the only one, so every read for a tenant names it.
"""

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from app.storage.ports.reconciliation_runs import Break as Break
from app.storage.ports.reconciliation_runs import ReconciliationRuns, RunRecord
from app.storage.unit_of_work import UnitOfWorkFactory


@dataclass(frozen=True, slots=True)
class RunListing:
    run_id: UUID
    as_of: datetime
    finished_at: datetime
    break_count: int  # the caller's: every break for an operator, its own for a tenant
    # The run as a whole: operators only (None for a tenant).
    result: str | None = None
    message_count: int | None = None
    pending_batches: int | None = None
    broken_batches: int | None = None
    duration_seconds: float | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class RunPage:
    run: RunListing
    breaks: list[Break]  # oldest first: the longest open is the most urgent


async def list_runs(uow_factory: UnitOfWorkFactory, scope: str | None, limit: int) -> list[RunListing]:
    """Newest first."""
    async with uow_factory() as uow:
        found = await uow.reconciliation_runs.latest(limit)
        own = await _own_break_counts(uow.reconciliation_runs, scope, [r.run_id for r in found])
    return [_listing(r, scope, own) for r in found]


async def run_page(uow_factory: UnitOfWorkFactory, run_id: UUID, scope: str | None, limit: int) -> RunPage | None:
    async with uow_factory() as uow:
        run = await uow.reconciliation_runs.get(run_id)
        if run is None:
            return None
        breaks = await uow.reconciliation_runs.breaks(run_id, scope, limit)
        own = await _own_break_counts(uow.reconciliation_runs, scope, [run_id])
    return RunPage(_listing(run, scope, own), breaks)


async def _own_break_counts(runs: ReconciliationRuns, scope: str | None, run_ids: list[UUID]) -> dict[UUID, int]:
    if scope is None or not run_ids:
        return {}
    return await runs.break_counts(run_ids, scope)


def _listing(run: RunRecord, scope: str | None, own: dict[UUID, int]) -> RunListing:
    if scope is not None:
        return RunListing(run.run_id, run.as_of, run.finished_at, own.get(run.run_id, 0))
    return RunListing(
        run.run_id,
        run.as_of,
        run.finished_at,
        run.break_count,
        run.result,
        run.message_count,
        run.pending_batches,
        run.broken_batches,
        run.duration.total_seconds(),
        run.error,
    )

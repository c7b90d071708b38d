"""Reconciliation runs and their breaks in PostgreSQL (no row-level security: every tenant filter is here)."""

from collections.abc import Sequence
from uuid import UUID

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.ports.reconciliation_runs import Break, RunRecord
from reconciliation.tables import reconciliation_breaks, reconciliation_runs

runs, brk = reconciliation_runs.c, reconciliation_breaks.c
_RUN = (
    runs.run_id,
    runs.as_of,
    runs.finished_at,
    runs.break_count,
    runs.result,
    runs.message_count,
    runs.pending_batches,
    runs.broken_batches,
    runs.duration,
    runs.error,
)
_BREAK = (
    brk.message_id,
    brk.tenant_id,
    brk.correlation_id,
    brk.currency,
    brk.status,
    brk.amount_cents,
    brk.detail,
    brk.first_seen_at,
    brk.age,
)


class SqlReconciliationRuns:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def latest(self, limit: int) -> list[RunRecord]:
        query = select(*_RUN).order_by(runs.as_of.desc()).limit(limit)
        return [RunRecord(*row) for row in await self._connection.execute(query)]

    async def get(self, run_id: UUID) -> RunRecord | None:
        row = (await self._connection.execute(select(*_RUN).where(runs.run_id == run_id))).first()
        return RunRecord(*row) if row is not None else None

    async def breaks(self, run_id: UUID, tenant_id: str | None, limit: int) -> list[Break]:
        query = select(*_BREAK).where(brk.run_id == run_id)
        if tenant_id is not None:
            query = query.where(brk.tenant_id == tenant_id)
        ordered = query.order_by(brk.first_seen_at, brk.message_id, brk.correlation_id, brk.currency)
        found = await self._connection.execute(ordered.limit(limit))
        return [
            Break(
                b.message_id,
                b.tenant_id,
                b.correlation_id,
                b.currency,
                b.status,
                b.amount_cents,
                b.detail,
                b.first_seen_at,
                age_seconds=int(b.age.total_seconds()),
            )
            for b in found
        ]

    async def break_counts(self, run_ids: Sequence[UUID], tenant_id: str) -> dict[UUID, int]:
        query = (
            select(brk.run_id, func.count())
            .where(brk.run_id.in_(list(run_ids)), brk.tenant_id == tenant_id)
            .group_by(brk.run_id)
        )
        return {run_id: int(n) for run_id, n in (await self._connection.execute(query)).all()}

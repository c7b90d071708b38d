"""Reconciliation runs and their breaks, as the job recorded them (reconciliation/record.py).

The tables carry no row-level security (the job copies its breaks in, which PostgreSQL refuses on a table
with policies): where a tenant is given, its filter is the only one."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol
from uuid import UUID


@dataclass(frozen=True, slots=True)
class RunRecord:
    run_id: UUID
    as_of: datetime
    finished_at: datetime
    break_count: int  # every tenant's
    result: str  # RECONCILED, PENDING, BREAKS or FAILED
    message_count: int
    pending_batches: int
    broken_batches: int
    duration: timedelta
    error: str | None


@dataclass(frozen=True, slots=True)
class Break:
    message_id: UUID | None  # None: the batch x currency's control totals disagree (status control_totals)
    tenant_id: str | None
    correlation_id: str | None
    currency: str | None
    status: str
    amount_cents: int
    detail: str | None
    first_seen_at: datetime
    age_seconds: int  # how long it had been open at the run's as-of time


class ReconciliationRuns(Protocol):
    async def latest(self, limit: int) -> list[RunRecord]:
        """Newest (as of) first."""
        ...

    async def get(self, run_id: UUID) -> RunRecord | None: ...

    async def breaks(self, run_id: UUID, tenant_id: str | None, limit: int) -> list[Break]:
        """The run's breaks (of one tenant, or of all), the longest open first."""
        ...

    async def break_counts(self, run_ids: Sequence[UUID], tenant_id: str) -> dict[UUID, int]:
        """The tenant's own breaks in each of these runs (runs where it has none are left out)."""
        ...

"""What the last reconciliation said about a payment: its break, if it had one.

The reconciliation tables carry no row-level security (the job copies its breaks in, which PostgreSQL
refuses on a table with policies), so every read names the payment's tenant itself.
"""

from datetime import datetime

from sqlalchemy import select

from app.storage.unit_of_work import UnitOfWorkFactory
from app.tracing.model import PaymentKey, ReconciliationVerdict
from app.tracing.records import of
from reconciliation.tables import reconciliation_breaks, reconciliation_runs

runs, breaks = reconciliation_runs.c, reconciliation_breaks.c
FAILED = "FAILED"  # a failed run recorded no breaks: it said nothing


async def last_verdict(
    uow_factory: UnitOfWorkFactory, key: PaymentKey, first_seen: datetime | None
) -> ReconciliationVerdict | None:
    """None when no run has finished yet. `first_seen` is the payment's first event: a payment that came
    after the run's as-of time was not in it."""
    last_run = select(runs.run_id, runs.as_of).where(runs.result != FAILED).order_by(runs.as_of.desc()).limit(1)
    async with uow_factory() as uow:
        run = (await uow.connection.execute(last_run)).first()
        if run is None:
            return None
        found = select(reconciliation_breaks).where(breaks.run_id == run.run_id, of(reconciliation_breaks, key))
        broken = (await uow.connection.execute(found)).first()
    if broken is not None:
        return ReconciliationVerdict(
            run.run_id,
            run.as_of,
            "break",
            broken.status,
            broken.detail,
            broken.first_seen_at,
            int(broken.age.total_seconds()),
        )
    late = first_seen is not None and first_seen > run.as_of
    return ReconciliationVerdict(run.run_id, run.as_of, "not yet reconciled" if late else "no break")

"""The in-memory unit of work: like the real one, it keeps its changes only when committed, and sees and
writes only its scope's rows (a tenant's, or every tenant's in the SYSTEM scope)."""

from collections.abc import Callable
from types import TracebackType
from typing import Self

from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.unit_of_work import SYSTEM, UnitOfWork, UnitOfWorkFactory
from tests.fakes.attempts import FakeDeliveryAttempts
from tests.fakes.audit import FakeDeadLetterAudit
from tests.fakes.batch_reports import FakeBatchReports
from tests.fakes.database import FakeDatabase, FakeTransaction
from tests.fakes.dead_letters import FakeDeadLetters
from tests.fakes.expired_records import FakeExpiredRecords
from tests.fakes.idempotency import FakeIdempotencyRecords
from tests.fakes.ledger import FakeLedger
from tests.fakes.outbox import FakeOutbox
from tests.fakes.rate_buckets import FakeRateBuckets
from tests.fakes.reconciliation_runs import FakeReconciliationRuns
from tests.fakes.replay_requests import FakeReplayRequests
from tests.fakes.report_lines import FakeReportLines
from tests.fakes.tenants import FakeTenants
from tests.fakes.worker_pools import FakeWorkerPools


class FakeUnitOfWork(UnitOfWork):
    def __init__(self, db: FakeDatabase, tenant_id: str | None = SYSTEM) -> None:
        self.db = db
        self.tenant_id = tenant_id
        self.committed = False

    @property
    def connection(self) -> AsyncConnection:
        raise AssertionError("the in-memory unit of work has no connection: use its repositories")

    async def __aenter__(self) -> Self:
        self._tx = tx = FakeTransaction(self.db, self.tenant_id)
        self.idempotency = FakeIdempotencyRecords(tx)
        self.ledger = FakeLedger(tx)
        self.attempts = FakeDeliveryAttempts(tx)
        self.dead_letters = FakeDeadLetters(tx)
        self.audit = FakeDeadLetterAudit(tx)
        self.replay_requests = FakeReplayRequests(tx)
        self.tenants = FakeTenants(tx)
        self.rate_buckets = FakeRateBuckets(tx)
        self.outbox = FakeOutbox(tx)
        self.worker_pools = FakeWorkerPools(tx)
        self.expired = FakeExpiredRecords(tx)
        self.batch_reports = FakeBatchReports(tx)
        self.report_lines = FakeReportLines(tx)
        self.reconciliation_runs = FakeReconciliationRuns(tx)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Whatever was not committed is discarded with the transaction."""

    async def commit(self) -> None:
        self._tx.commit()
        self.committed = True


def fake_uow_factory(db: FakeDatabase, on_open: Callable[[FakeUnitOfWork], None] | None = None) -> UnitOfWorkFactory:
    """Units of work on `db`; `on_open` sees each one as it is made (to count or inspect them)."""

    def factory(tenant_id: str | None = SYSTEM) -> UnitOfWork:
        uow = FakeUnitOfWork(db, tenant_id)
        if on_open is not None:
            on_open(uow)
        return uow

    return factory

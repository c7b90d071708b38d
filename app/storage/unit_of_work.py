"""A unit of work over one PostgreSQL transaction: it rolls back unless commit() was called.

It carries the repositories (app/storage/ports/): everything a service reads or writes goes through them, in
this one transaction. Every unit of work runs in a scope that PostgreSQL's row-level security enforces: a
tenant (the rows of that tenant only, for reading and for writing) or SYSTEM (the relay, the archiver,
operators). The scope is set with SET LOCAL semantics at the start of the transaction, so it cannot leak to
the next one.
"""

from types import TracebackType
from typing import Final, Protocol, Self

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncTransaction

from app.storage.ports.attempts import DeliveryAttempts
from app.storage.ports.audit import DeadLetterAudit
from app.storage.ports.batch_reports import BatchReports
from app.storage.ports.dead_letters import DeadLetters
from app.storage.ports.expired_records import ExpiredRecords
from app.storage.ports.idempotency import IdempotencyRecords
from app.storage.ports.ledger import Ledger
from app.storage.ports.outbox import Outbox
from app.storage.ports.rate_buckets import RateBuckets
from app.storage.ports.reconciliation_runs import ReconciliationRuns
from app.storage.ports.replay_requests import ReplayRequests
from app.storage.ports.report_lines import ReportLines
from app.storage.ports.tenants import Tenants
from app.storage.ports.worker_pools import WorkerPools
from app.storage.repositories.attempts import SqlDeliveryAttempts
from app.storage.repositories.audit import SqlDeadLetterAudit
from app.storage.repositories.batch_reports import SqlBatchReports
from app.storage.repositories.dead_letters import SqlDeadLetters
from app.storage.repositories.expired_records import SqlExpiredRecords
from app.storage.repositories.idempotency import SqlIdempotencyRecords
from app.storage.repositories.ledger import SqlLedger
from app.storage.repositories.outbox import SqlOutbox
from app.storage.repositories.rate_buckets import SqlRateBuckets
from app.storage.repositories.reconciliation_runs import SqlReconciliationRuns
from app.storage.repositories.replay_requests import SqlReplayRequests
from app.storage.repositories.report_lines import SqlReportLines
from app.storage.repositories.tenants import SqlTenants
from app.storage.repositories.worker_pools import SqlWorkerPools

SYSTEM: Final = None  # the scope of components that work across tenants

_SET_SCOPE = text("SELECT set_config('remit.scope', :scope, true), set_config('remit.tenant_id', :tenant, true)")


class UnitOfWork(Protocol):
    idempotency: IdempotencyRecords
    ledger: Ledger
    attempts: DeliveryAttempts
    dead_letters: DeadLetters
    audit: DeadLetterAudit
    replay_requests: ReplayRequests
    tenants: Tenants
    rate_buckets: RateBuckets
    outbox: Outbox
    worker_pools: WorkerPools
    expired: ExpiredRecords
    batch_reports: BatchReports
    report_lines: ReportLines
    reconciliation_runs: ReconciliationRuns

    @property
    def connection(self) -> AsyncConnection:
        """The transaction's connection, for the modules whose SQL has not moved behind a repository yet
        (app/publisher/, app/tracing/, app/admin/api_keys.py, app/admin/batch_status.py, app/observability/peek.py).
        New code uses the repositories; the in-memory unit of work of the tests has no connection."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    async def commit(self) -> None: ...


class SqlUnitOfWork(UnitOfWork):
    def __init__(self, engine: AsyncEngine, tenant_id: str | None = SYSTEM) -> None:
        self._engine = engine
        self._tenant_id = tenant_id
        self._transaction: AsyncTransaction | None = None

    @property
    def connection(self) -> AsyncConnection:
        return self._connection

    async def __aenter__(self) -> Self:
        self._connection = connection = await self._engine.connect()
        self._transaction = await connection.begin()
        scope = "system" if self._tenant_id is SYSTEM else "tenant"
        await connection.execute(_SET_SCOPE, {"scope": scope, "tenant": self._tenant_id or ""})
        self.idempotency = SqlIdempotencyRecords(connection)
        self.ledger = SqlLedger(connection)
        self.attempts = SqlDeliveryAttempts(connection)
        self.dead_letters = SqlDeadLetters(connection)
        self.audit = SqlDeadLetterAudit(connection)
        self.replay_requests = SqlReplayRequests(connection)
        self.tenants = SqlTenants(connection)
        self.rate_buckets = SqlRateBuckets(connection)
        self.outbox = SqlOutbox(connection)
        self.worker_pools = SqlWorkerPools(connection)
        self.expired = SqlExpiredRecords(connection)
        self.batch_reports = SqlBatchReports(connection)
        self.report_lines = SqlReportLines(connection)
        self.reconciliation_runs = SqlReconciliationRuns(connection)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self._transaction is not None and self._transaction.is_active:
                await self._transaction.rollback()
        finally:
            await self._connection.close()

    async def commit(self) -> None:
        assert self._transaction is not None, "commit() outside the unit of work"
        await self._transaction.commit()


class UnitOfWorkFactory(Protocol):
    def __call__(self, tenant_id: str | None = SYSTEM) -> UnitOfWork:
        """A unit of work for one tenant's rows, or for every tenant's (SYSTEM)."""
        ...

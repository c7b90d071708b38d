"""Group commit: the batches of many queue workers committed together, each told its own outcomes.

Workers hand over a batch of payments and wait; a single flusher takes whatever has queued up while the
previous commit ran (natural batching: one batch at low load, several workers' batches under pressure).
Each tenant's share of a flush is one transaction in that tenant's row-level-security scope, so
PostgreSQL itself refuses a write to another tenant's rows; the tenants' transactions run side by side.
Only after its transactions commit does a worker get its outcomes, so the broker ack always follows the
durable effect.
"""

import asyncio
import enum
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import bindparam, delete, select, text
from sqlalchemy.dialects.postgresql import ARRAY, INTEGER, VARCHAR
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
from sqlalchemy.ext.asyncio import AsyncConnection

from app.consumer.core_banking import CoreBanking
from app.errors import RemitError, ServiceUnavailable, UnknownTenant
from app.observability.metrics import ObserveStage, ignore_stage
from app.storage.tables import processed_messages, tenants
from app.storage.unit_of_work import UnitOfWorkFactory
from contracts import PaymentMessage


class Outcome(enum.Enum):
    PROCESSED = "processed"
    DUPLICATE = "duplicate"


Result = Outcome | RemitError


@dataclass(slots=True)
class _Submission:
    """One worker's batch: one future for all of its payments (no per-payment future on the hot path)."""

    payments: Sequence[PaymentMessage]
    done: asyncio.Future[list[Result]]
    submitted: float  # monotonic


_CLAIM = text(
    """
    INSERT INTO processed_messages (message_id, tenant_id, correlation_id, attempt)
    SELECT * FROM unnest(:ids, :tenants, :batches, :attempts)
    ON CONFLICT (message_id) DO NOTHING
    RETURNING message_id
    """
).bindparams(
    bindparam("ids", type_=ARRAY(PG_UUID(as_uuid=True))),
    bindparam("tenants", type_=ARRAY(VARCHAR)),
    bindparam("batches", type_=ARRAY(VARCHAR)),
    bindparam("attempts", type_=ARRAY(INTEGER)),
)


class GroupCommitter:
    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        core_banking: CoreBanking,
        max_batch: int,
        after_commit: Callable[[], None] = lambda: None,
        observe: ObserveStage = ignore_stage,
    ) -> None:
        self._observe = observe
        self._after_commit = after_commit
        self._uow_factory = uow_factory
        self._core_banking = core_banking
        self._max_batch = max_batch
        self._queue: asyncio.Queue[_Submission] = asyncio.Queue()
        # Tenants are never deleted, so a tenant seen once needs no lookup in every later transaction.
        self._known_tenants: set[str] = set()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="group-committer")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        while not self._queue.empty():  # nobody will commit these: their workers must not wait forever
            submission = self._queue.get_nowait()
            if not submission.done.done():
                submission.done.set_exception(ServiceUnavailable("the group committer stopped"))

    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def _tenant_known(self, connection: AsyncConnection, tenant_id: str) -> bool:
        if tenant_id not in self._known_tenants:
            query = select(tenants.c.tenant_id).where(tenants.c.tenant_id == tenant_id)
            if (await connection.execute(query)).first() is not None:
                self._known_tenants.add(tenant_id)
        return tenant_id in self._known_tenants

    async def was_processed(self, payment: PaymentMessage) -> bool:
        async with self._uow_factory(payment.tenant_id) as uow:
            query = select(processed_messages.c.message_id).where(processed_messages.c.message_id == payment.message_id)
            return (await uow.connection.execute(query)).first() is not None

    async def commit_many(self, payments: Sequence[PaymentMessage]) -> list[Result]:
        """Return once the payments' effects are durable: for each payment, its outcome or its failure."""
        if not self.running():
            raise ServiceUnavailable("the group committer is not running")
        if not payments:
            return []
        done: asyncio.Future[list[Result]] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait(_Submission(payments, done, time.monotonic()))
        return await done

    async def _run(self) -> None:
        while True:
            batch = [await self._queue.get()]
            size = len(batch[0].payments)
            while size < self._max_batch and not self._queue.empty():
                batch.append(self._queue.get_nowait())
                size += len(batch[-1].payments)
            started = time.monotonic()
            self._observe("commit_wait", started - batch[0].submitted)
            await self._flush(batch)
            self._observe("commit", time.monotonic() - started)

    async def _flush(self, batch: list[_Submission]) -> None:
        payments = [p for submission in batch for p in submission.payments]
        firsts = _first_per_message(payments)
        by_tenant: dict[str, list[PaymentMessage]] = defaultdict(list)
        for payment in firsts.values():
            by_tenant[payment.tenant_id].append(payment)
        results: dict[UUID, Result] = {}
        for outcome in await asyncio.gather(*(self._commit_or_fail(t, items) for t, items in by_tenant.items())):
            results.update(outcome)
        for submission in batch:
            # A second copy in the same flush: the first one decides, this one is a duplicate.
            outcomes = [
                results[p.message_id] if firsts[p.message_id] is p else Outcome.DUPLICATE for p in submission.payments
            ]
            if not submission.done.done():
                submission.done.set_result(outcomes)

    async def _commit_or_fail(self, tenant_id: str, items: list[PaymentMessage]) -> dict[UUID, Result]:
        try:
            return await self._commit_tenant(tenant_id, items)
        except Exception as exc:  # the transaction failed: every payment in it may be retried
            error = ServiceUnavailable(f"commit failed: {type(exc).__name__}: {exc}")
            return {p.message_id: error for p in items}

    async def _commit_tenant(self, tenant_id: str, items: Sequence[PaymentMessage]) -> dict[UUID, Result]:
        async with self._uow_factory(tenant_id) as uow:
            if not await self._tenant_known(uow.connection, tenant_id):
                error = UnknownTenant(f"tenant {tenant_id!r} is not known to remit")
                return {p.message_id: error for p in items}
            rows = await uow.connection.execute(_CLAIM, _claim_params(items))
            new_ids = {row.message_id for row in rows}
            new = [p for p in items if p.message_id in new_ids]
            failures = await self._core_banking.book(uow.connection, new)
            if failures:
                # A failed booking must not leave an idempotency record behind: the retry needs it free.
                await uow.connection.execute(
                    delete(processed_messages).where(processed_messages.c.message_id.in_(list(failures)))
                )
            await uow.commit()
        self._after_commit()
        return {p.message_id: _outcome(p.message_id, new_ids, failures) for p in items}


def _first_per_message(payments: Sequence[PaymentMessage]) -> dict[UUID, PaymentMessage]:
    firsts: dict[UUID, PaymentMessage] = {}
    for payment in payments:
        firsts.setdefault(payment.message_id, payment)
    return firsts


def _claim_params(payments: Sequence[PaymentMessage]) -> dict[str, list[object]]:
    return {
        "ids": [p.message_id for p in payments],
        "tenants": [p.tenant_id for p in payments],
        "batches": [p.correlation_id for p in payments],
        "attempts": [p.retry_count + 1 for p in payments],
    }


def _outcome(message_id: UUID, new_ids: set[UUID], failures: Mapping[UUID, RemitError]) -> Result:
    if message_id in failures:
        return failures[message_id]
    return Outcome.PROCESSED if message_id in new_ids else Outcome.DUPLICATE

"""Group commit: many handlers' payments committed together, each handler told its own outcome.

Handlers hand their payment over and wait; a single flusher takes whatever has queued up while the
previous commit ran (natural batching: one payment at low load, hundreds under pressure). Each tenant's
share of a flush is one transaction in that tenant's row-level-security scope, so PostgreSQL itself
refuses a write to another tenant's rows; the tenants' transactions run side by side. Only after its
transaction commits does a handler return, so the broker ack always follows the durable effect.
"""

import asyncio
import enum
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import bindparam, delete, select, text
from sqlalchemy.dialects.postgresql import ARRAY, INTEGER, VARCHAR
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
from sqlalchemy.ext.asyncio import AsyncConnection

from app.consumer.core_banking import CoreBanking
from app.errors import RemitError, ServiceUnavailable, UnknownTenant
from app.storage.tables import processed_messages, tenants
from app.storage.unit_of_work import UnitOfWorkFactory
from contracts import PaymentMessage


class Outcome(enum.Enum):
    PROCESSED = "processed"
    DUPLICATE = "duplicate"


@dataclass(slots=True)
class _Pending:
    payment: PaymentMessage
    attempt: int
    done: asyncio.Future[Outcome]


Result = Outcome | RemitError

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
    ) -> None:
        self._after_commit = after_commit
        self._uow_factory = uow_factory
        self._core_banking = core_banking
        self._max_batch = max_batch
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue()
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

    async def commit(self, payment: PaymentMessage, attempt: int) -> Outcome:
        """Return once the payment's effect is durable; raise RemitError for this payment's failure."""
        if not self.running():
            raise ServiceUnavailable("the group committer is not running")
        done: asyncio.Future[Outcome] = asyncio.get_running_loop().create_future()
        await self._queue.put(_Pending(payment, attempt, done))
        return await done

    async def _run(self) -> None:
        while True:
            batch = [await self._queue.get()]
            while len(batch) < self._max_batch and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            await self._flush(batch)

    async def _flush(self, batch: list[_Pending]) -> None:
        firsts = _first_per_message(batch)
        by_tenant: dict[str, list[_Pending]] = defaultdict(list)
        for item in firsts.values():
            by_tenant[item.payment.tenant_id].append(item)
        results: dict[UUID, Result] = {}
        for outcome in await asyncio.gather(*(self._commit_or_fail(t, items) for t, items in by_tenant.items())):
            results.update(outcome)
        for item in batch:
            message_id = item.payment.message_id
            # A second copy in the same batch: the first one decides, this one is a duplicate.
            _settle(item.done, results[message_id] if firsts[message_id] is item else Outcome.DUPLICATE)

    async def _commit_or_fail(self, tenant_id: str, items: list[_Pending]) -> dict[UUID, Result]:
        try:
            return await self._commit_tenant(tenant_id, items)
        except Exception as exc:  # the transaction failed: every payment in it may be retried
            error = ServiceUnavailable(f"commit failed: {type(exc).__name__}: {exc}")
            return {item.payment.message_id: error for item in items}

    async def _commit_tenant(self, tenant_id: str, items: Sequence[_Pending]) -> dict[UUID, Result]:
        async with self._uow_factory(tenant_id) as uow:
            if not await self._tenant_known(uow.connection, tenant_id):
                error = UnknownTenant(f"tenant {tenant_id!r} is not known to remit")
                return {item.payment.message_id: error for item in items}
            rows = await uow.connection.execute(_CLAIM, _claim_params(items))
            new_ids = {row.message_id for row in rows}
            new = [item.payment for item in items if item.payment.message_id in new_ids]
            failures = await self._core_banking.book(uow.connection, new)
            if failures:
                # A failed booking must not leave an idempotency record behind: the retry needs it free.
                await uow.connection.execute(
                    delete(processed_messages).where(processed_messages.c.message_id.in_(list(failures)))
                )
            await uow.commit()
        self._after_commit()
        return {item.payment.message_id: _outcome(item, new_ids, failures) for item in items}


def _first_per_message(batch: Sequence[_Pending]) -> dict[UUID, _Pending]:
    firsts: dict[UUID, _Pending] = {}
    for item in batch:
        firsts.setdefault(item.payment.message_id, item)
    return firsts


def _claim_params(items: Iterable[_Pending]) -> dict[str, list[object]]:
    pending = list(items)
    return {
        "ids": [p.payment.message_id for p in pending],
        "tenants": [p.payment.tenant_id for p in pending],
        "batches": [p.payment.correlation_id for p in pending],
        "attempts": [p.attempt for p in pending],
    }


def _outcome(item: _Pending, new_ids: set[UUID], failures: Mapping[UUID, RemitError]) -> Result:
    message_id = item.payment.message_id
    if message_id in failures:
        return failures[message_id]
    return Outcome.PROCESSED if message_id in new_ids else Outcome.DUPLICATE


def _settle(done: asyncio.Future[Outcome], result: Result) -> None:
    if done.done():
        return
    if isinstance(result, BaseException):
        done.set_exception(result)
    else:
        done.set_result(result)

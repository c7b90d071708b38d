"""Group commit: many handlers' payments committed in one transaction, each handler told its own outcome.

Handlers hand their payment over and wait; a single flusher takes whatever has queued up while the
previous transaction ran (natural batching: one payment at low load, hundreds under pressure) and, in
ONE transaction, writes the idempotency records and books the new transfers. Only after the commit
does a handler return, so the broker ack always follows the durable effect.
"""

import asyncio
import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import bindparam, delete, text
from sqlalchemy.dialects.postgresql import ARRAY, INTEGER, VARCHAR
from sqlalchemy.dialects.postgresql import UUID as PG_UUID

from app.consumer.core_banking import CoreBanking
from app.errors import RemitError, ServiceUnavailable
from app.storage.tables import processed_messages
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
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="group-committer")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def commit(self, payment: PaymentMessage, attempt: int) -> Outcome:
        """Return once the payment's effect is durable; raise RemitError for this payment's failure."""
        if self._task is None or self._task.done():
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
        try:
            outcomes = await self._commit_batch(batch)
        except Exception as exc:  # the whole transaction failed: every payment may be retried
            error = ServiceUnavailable(f"commit failed: {type(exc).__name__}: {exc}")
            for item in batch:
                _settle(item.done, error)
            return
        for item in batch:
            _settle(item.done, outcomes[id(item)])

    async def _commit_batch(self, batch: Sequence[_Pending]) -> dict[int, Outcome | RemitError]:
        firsts = _first_per_message(batch)
        async with self._uow_factory() as uow:
            rows = await uow.connection.execute(_CLAIM, _claim_params(firsts.values()))
            new_ids = {row.message_id for row in rows}
            payments = [firsts[i].payment for i in new_ids]
            failures = await self._core_banking.book(uow.connection, payments)
            if failures:
                # A failed booking must not leave an idempotency record behind: the retry needs it free.
                await uow.connection.execute(
                    delete(processed_messages).where(processed_messages.c.message_id.in_(list(failures)))
                )
            await uow.commit()
        self._after_commit()
        return {id(item): _outcome(item, firsts, new_ids, failures) for item in batch}


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


def _outcome(
    item: _Pending, firsts: dict[UUID, _Pending], new_ids: set[UUID], failures: Mapping[UUID, RemitError]
) -> Outcome | RemitError:
    message_id = item.payment.message_id
    if firsts[message_id] is not item or message_id not in new_ids:
        return Outcome.DUPLICATE
    return failures.get(message_id, Outcome.PROCESSED)


def _settle(done: asyncio.Future[Outcome], result: Outcome | BaseException) -> None:
    if done.done():
        return
    if isinstance(result, BaseException):
        done.set_exception(result)
    else:
        done.set_result(result)

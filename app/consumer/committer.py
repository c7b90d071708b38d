"""Group commit: the batches of many queue workers committed together, each told its own outcomes.

Workers hand over a batch of payments and wait; a flusher takes whatever has queued up while the previous
commit ran (natural batching: one batch at low load, several workers' batches under pressure). Several
flushers share the one queue (`concurrency`): with an external core a flush is mostly waiting for the core's
answer, and a second flush in flight overlaps that wait instead of queueing behind it.
Each tenant's share of a flush is one transaction in that tenant's row-level-security scope, so
PostgreSQL itself refuses a write to another tenant's rows; the tenants' transactions run side by side.
Only after its transactions commit does a worker get its outcomes, so the broker ack always follows the
durable effect.

In a tenant's transaction the payments' idempotency records are claimed first (one statement); only the ones
claimed now go to the core (app/consumer/core_banking.py), before the transaction commits: the embedded core
books them in the same transaction, an external one in its own system, and what it said is recorded here (its
transfer ids beside the records; a failed booking's record removed). So whatever crashes before our commit,
the retry finds the id free and sends the same key, which an external core answers with its recorded outcome.

Two flushes in flight may carry the same (tenant, message_id) (a redelivery beside the original): the unique
index makes the second claim wait until the first transaction ends, and then it finds the record (a
duplicate) or, if the first rolled back, claims it. Claims insert in message_id order (the repository sorts
them), so two flushes never hold each other's keys in opposite orders: no deadlock. Across flushes in
flight, which of a debtor's payments the core books first is the order the flushes reach it.

A payment is identified by (tenant_id, message_id): the message_id is the tenant's own idempotency key.
When PostgreSQL refuses a row of a tenant's share (a constraint, a value), the share is split in halves
and each committed, recursively, so that only the payment at fault fails (permanently) and the others
commit in the same flush. A lost connection is not the data's fault: the whole share is retried.
"""

import asyncio
import enum
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from uuid import UUID

from app.consumer.core_banking import NO_GENERATIONS, Booked, CoreBanking, CoreOutcome, Generations
from app.consumer.core_keys import FIRST_GENERATION
from app.consumer.digest import payment_digest
from app.errors import CommitFailed, ConflictingDuplicate, MessageFailure, RefusedByDatabase, UnknownTenant
from app.observability.metrics import ObserveStage, ignore_stage
from app.storage.db_errors import describe, row_refused
from app.storage.ports.idempotency import CoreTransfer, IdempotencyRecords
from app.storage.unit_of_work import UnitOfWork, UnitOfWorkFactory
from contracts import PaymentMessage


class Outcome(enum.Enum):
    PROCESSED = "processed"
    DUPLICATE = "duplicate"


Result = Outcome | MessageFailure
# (tenant_id, message_id.int): the flush's maps key a message_id by its integer, whose hash is C; a UUID's
# `__hash__` is a Python call, several per payment on the consumer's hot path.
PaymentKey = tuple[str, int]


@dataclass(slots=True)
class _Submission:
    """One worker's batch: one future for all of its payments (no per-payment future on the hot path)."""

    payments: Sequence[PaymentMessage]
    done: asyncio.Future[list[Result]]
    submitted: float  # monotonic


class GroupCommitter:
    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        core_banking: CoreBanking,
        max_batch: int,
        after_commit: Callable[[], None] = lambda: None,
        observe: ObserveStage = ignore_stage,
        after_core: Callable[[], None] = lambda: None,
        concurrency: int = 1,
        keyed_core: bool = False,
    ) -> None:
        if concurrency < 1:
            raise ValueError("the committer needs at least one flusher")
        self._observe = observe
        self._after_commit = after_commit
        self._after_core = after_core
        self._uow_factory = uow_factory
        self._core_banking = core_banking
        self._max_batch = max_batch
        self._queue: asyncio.Queue[_Submission] = asyncio.Queue()
        # Tenants are never deleted, so a tenant seen once needs no lookup in every later transaction.
        self._known_tenants: set[str] = set()
        self._concurrency = concurrency
        # An external core remembers every key it was sent (a refusal too, for good): each payment goes under its
        # latest transfer key generation. The embedded ledger has no keys, so nothing is read for it.
        self._keyed_core = keyed_core
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(self._run(), name=f"group-committer-{n}") for n in range(self._concurrency)]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        while not self._queue.empty():  # nobody will commit these: their workers must not wait forever
            submission = self._queue.get_nowait()
            if not submission.done.done():
                submission.done.set_exception(CommitFailed("the group committer stopped"))

    def running(self) -> bool:
        # One flusher that died (it never should: _flush catches per share) leaves the others serving the queue.
        return any(not task.done() for task in self._tasks)

    async def _tenant_known(self, uow: UnitOfWork, tenant_id: str) -> bool:
        if tenant_id not in self._known_tenants and await uow.tenants.exists(tenant_id):
            self._known_tenants.add(tenant_id)
        return tenant_id in self._known_tenants

    async def was_processed(self, payment: PaymentMessage) -> bool:
        async with self._uow_factory(payment.tenant_id) as uow:
            return await uow.idempotency.is_recorded(payment.tenant_id, payment.message_id)

    async def commit_many(self, payments: Sequence[PaymentMessage]) -> list[Result]:
        """Return once the payments' effects are durable: for each payment, its outcome or its failure."""
        if not self.running():
            raise CommitFailed("the group committer is not running")
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
        firsts = _first_per_payment(payments)
        by_tenant: dict[str, list[PaymentMessage]] = defaultdict(list)
        for payment in firsts.values():
            by_tenant[payment.tenant_id].append(payment)
        shares = await asyncio.gather(*(self._commit_or_split(t, items) for t, items in by_tenant.items()))
        results = dict(zip(by_tenant, shares, strict=True))
        for submission in batch:
            # A second copy in the same flush: the first one decides, this one is a duplicate (or a conflict).
            outcomes = [
                results[p.tenant_id][p.message_id.int]
                if (first := firsts[p.tenant_id, p.message_id.int]) is p
                else _copy_of(first, results[p.tenant_id][p.message_id.int], p)
                for p in submission.payments
            ]
            if not submission.done.done():
                submission.done.set_result(outcomes)

    async def _commit_or_split(self, tenant_id: str, items: Sequence[PaymentMessage]) -> dict[int, Result]:
        """Commit a tenant's share; if PostgreSQL refuses a row, commit each half the same way."""
        try:
            return await self._commit_tenant(tenant_id, items)
        except Exception as exc:  # never str(exc): it carries the statement's parameters
            if not row_refused(exc):  # the connection or the server failed: every payment may be retried
                error: MessageFailure = CommitFailed(f"commit failed: {describe(exc)}")
                return {p.message_id.int: error for p in items}
            if len(items) == 1:
                error = RefusedByDatabase(f"PostgreSQL refused this payment: {describe(exc)}")
                return {items[0].message_id.int: error}
        half = len(items) // 2
        return {
            **await self._commit_or_split(tenant_id, items[:half]),
            **await self._commit_or_split(tenant_id, items[half:]),
        }

    async def _commit_tenant(self, tenant_id: str, items: Sequence[PaymentMessage]) -> dict[int, Result]:
        async with self._uow_factory(tenant_id) as uow:
            if not await self._tenant_known(uow, tenant_id):
                error = UnknownTenant(f"tenant {tenant_id!r} is not known to remit")
                return {p.message_id.int: error for p in items}
            digests = [payment_digest(p) for p in items]
            claimed = {message_id.int for message_id in await uow.idempotency.claim(items, digests)}
            new = [p for p in items if p.message_id.int in claimed]
            duplicates = {
                p.message_id: (p, d) for p, d in zip(items, digests, strict=True) if p.message_id.int not in claimed
            }
            conflicts = await _conflicts(uow.idempotency, tenant_id, duplicates)
            generations = await self._generations(uow, tenant_id, new)
            outcomes = await self._book(uow, new, generations)
            failures = await _record(uow.idempotency, tenant_id, new, outcomes, generations)
            if new:
                self._after_core()  # a fault point (tests): the core committed, remit has not
            await uow.commit()
        self._after_commit()
        failed = {**conflicts, **failures}
        return {p.message_id.int: _outcome(p.message_id, p.message_id.int in claimed, failed) for p in items}

    async def _generations(self, uow: UnitOfWork, tenant_id: str, payments: Sequence[PaymentMessage]) -> Generations:
        """The key generation of each payment about to be sent that a forced replay moved past the first. Read in
        the transaction that holds the payments' claims, after the replay committed the generation it opened
        (app/deadletters/replay.py commits it before it publishes)."""
        if not (self._keyed_core and payments):
            return NO_GENERATIONS
        return await uow.idempotency.key_generations(tenant_id, [p.message_id for p in payments])

    async def _book(
        self, uow: UnitOfWork, payments: Sequence[PaymentMessage], generations: Generations
    ) -> list[CoreOutcome]:
        return await self._core_banking.book(payments, uow.ledger, generations) if payments else []


async def _record(
    records: IdempotencyRecords,
    tenant_id: str,
    payments: Sequence[PaymentMessage],
    outcomes: Sequence[CoreOutcome],
    generations: Generations = NO_GENERATIONS,
) -> dict[UUID, MessageFailure]:
    """What the core said, beside the idempotency records: its transfer ids, its time of each booking and the key
    generation it was booked under; and the failed bookings' records removed, so that a retry or a replay is not
    mistaken for a duplicate. Returns the failures."""
    failures: dict[UUID, MessageFailure] = {}
    transfers: dict[UUID, CoreTransfer] = {}
    for payment, outcome in zip(payments, outcomes, strict=True):
        if not isinstance(outcome, Booked):
            failures[payment.message_id] = outcome
        elif outcome.transfer_id is not None:
            generation = generations.get(payment.message_id, FIRST_GENERATION)
            transfers[payment.message_id] = CoreTransfer(outcome.transfer_id, outcome.booked_at, generation)
    if failures:
        await records.release(tenant_id, failures)
    if transfers:
        await records.record_transfers(tenant_id, transfers)
    return failures


def _first_per_payment(payments: Sequence[PaymentMessage]) -> dict[PaymentKey, PaymentMessage]:
    firsts: dict[PaymentKey, PaymentMessage] = {}
    for payment in payments:
        firsts.setdefault((payment.tenant_id, payment.message_id.int), payment)
    return firsts


async def _conflicts(
    records: IdempotencyRecords, tenant_id: str, duplicates: Mapping[UUID, tuple[PaymentMessage, bytes]]
) -> dict[UUID, MessageFailure]:
    """The duplicates whose recorded payment differs from theirs: a used id reused for another payment."""
    if not duplicates:
        return {}
    recorded = await records.digests(tenant_id, duplicates)
    return {
        message_id: _conflict(payment, digest)
        for message_id, (payment, mine) in duplicates.items()
        if (digest := recorded.get(message_id)) is not None and digest != mine
    }


def _copy_of(first: PaymentMessage, first_result: Result, copy: PaymentMessage) -> Result:
    """A second copy of a (tenant, id) in one flush: the same payment as the record is a duplicate."""
    recorded = first_result.recorded_digest if isinstance(first_result, ConflictingDuplicate) else payment_digest(first)
    return Outcome.DUPLICATE if payment_digest(copy) == recorded else _conflict(copy, recorded)


def _conflict(payment: PaymentMessage, recorded: bytes) -> ConflictingDuplicate:
    return ConflictingDuplicate(
        f"message_id {payment.message_id} was already used by tenant {payment.tenant_id!r} for a different "
        "payment (reference, amount, currency, accounts or batch differ): resubmit it with a new message_id",
        recorded,
    )


def _outcome(message_id: UUID, claimed: bool, failures: Mapping[UUID, MessageFailure]) -> Result:
    if failures and message_id in failures:
        return failures[message_id]
    return Outcome.PROCESSED if claimed else Outcome.DUPLICATE

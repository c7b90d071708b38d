"""Several group commits in flight (REMIT_COMMIT_FLUSHES > 1): the same payment in two of them is booked once.

The second flush's claim of a (tenant, message_id) waits on the unique index until the first flush's
transaction ends; it then finds the record (a duplicate), or claims it if the first one gave it back. Claims
are made in message_id order, so flushes holding overlapping ids in opposite orders never deadlock.
"""

import asyncio
import random
from collections.abc import Sequence

import pytest
from sqlalchemy import text

from app.consumer.committer import Outcome, Result
from app.consumer.core_banking import NO_GENERATIONS, CoreOutcome, Generations, LedgerCoreBanking
from app.errors import CoreBankingUnavailable
from app.storage.engine import make_engine
from app.storage.ports.ledger import Ledger
from app.storage.unit_of_work import UnitOfWorkFactory
from contracts import PaymentMessage
from tests.utils.committer import running_committer
from tests.utils.factories import make_message
from tests.utils.services import eventually
from tests.utils.world import fresh_tenant, ledger_rows_for_tenant

pytestmark = pytest.mark.integration


class GatedCore:
    """The embedded ledger, except that the first booking waits (inside its flush's transaction, its claims
    held) until the test opens the gate; it can also fail that first booking, as an unreachable core would."""

    def __init__(self, fail_first: bool = False) -> None:
        self.entered = asyncio.Event()
        self.gate = asyncio.Event()
        self._fail_first = fail_first
        self._calls = 0
        self._ledger = LedgerCoreBanking()

    async def book(
        self, payments: Sequence[PaymentMessage], ledger: Ledger, generations: Generations = NO_GENERATIONS
    ) -> list[CoreOutcome]:
        self._calls += 1
        if self._calls == 1:
            self.entered.set()
            await self.gate.wait()
            if self._fail_first:
                return [CoreBankingUnavailable("the core did not answer")] * len(payments)
        return await self._ledger.book(payments, ledger)


async def _a_claim_waits_on_a_lock(database_url: str) -> bool:
    """Read as the committer's own role (the service role sees its sessions' wait events)."""
    query = text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    engine = make_engine(database_url, pool_size=1)
    try:
        async with engine.connect() as conn:
            return bool((await conn.execute(query)).scalar_one())
    finally:
        await engine.dispose()


async def _two_flushes(
    database_url: str, core: GatedCore, first: list[PaymentMessage], second: list[PaymentMessage]
) -> tuple[list[Result], list[Result]]:
    async with running_committer(database_url, concurrency=2, core=core) as committer:
        one = asyncio.create_task(committer.commit_many(first))
        await asyncio.wait_for(core.entered.wait(), 10)
        two = asyncio.create_task(committer.commit_many(second))
        await eventually(lambda: _a_claim_waits_on_a_lock(database_url))  # the second flush is blocked, not done
        assert not two.done()
        core.gate.set()
        return await asyncio.wait_for(one, 10), await asyncio.wait_for(two, 10)


async def test_the_same_payment_in_two_flushes_in_flight_is_booked_once(
    uow_factory: UnitOfWorkFactory, database_url: str
) -> None:
    tenant = await fresh_tenant(uow_factory)
    payment, other = make_message(tenant_id=tenant, amount_cents=700), make_message(tenant_id=tenant)
    first, second = await _two_flushes(database_url, GatedCore(), [payment], [other, payment.with_retry()])
    assert first == [Outcome.PROCESSED]
    assert second == [Outcome.PROCESSED, Outcome.DUPLICATE]
    rows = await ledger_rows_for_tenant(uow_factory, tenant)
    assert sorted(r.message_id for r in rows) == sorted([payment.message_id, other.message_id])


async def test_when_the_first_flush_gives_the_payment_back_the_second_books_it(
    uow_factory: UnitOfWorkFactory, database_url: str
) -> None:
    tenant = await fresh_tenant(uow_factory)
    payment = make_message(tenant_id=tenant, amount_cents=800)
    first, second = await _two_flushes(database_url, GatedCore(fail_first=True), [payment], [payment.with_retry()])
    assert isinstance(first[0], CoreBankingUnavailable)
    assert second == [Outcome.PROCESSED]
    assert [r.message_id for r in await ledger_rows_for_tenant(uow_factory, tenant)] == [payment.message_id]


async def test_overlapping_flushes_in_opposite_orders_never_deadlock(
    uow_factory: UnitOfWorkFactory, database_url: str
) -> None:
    tenant = await fresh_tenant(uow_factory)
    payments = [make_message(tenant_id=tenant, amount_cents=100 + n) for n in range(400)]
    rng = random.Random(14)
    batches = [rng.sample(payments, 250) for _ in range(16)]  # every pair of batches overlaps, in its own order
    # max_batch 250: each flush holds one batch, so the flushes really overlap
    async with running_committer(database_url, max_batch=250, concurrency=4) as committer:
        results = await asyncio.gather(*(committer.commit_many(batch) for batch in batches))
    outcomes = [outcome for batch in results for outcome in batch]
    assert all(isinstance(outcome, Outcome) for outcome in outcomes), outcomes  # no deadlock, no failure
    booked = {
        p.message_id
        for batch, result in zip(batches, results, strict=True)
        for p, outcome in zip(batch, result, strict=True)
        if outcome is Outcome.PROCESSED
    }
    rows = await ledger_rows_for_tenant(uow_factory, tenant)
    assert len(rows) == len({r.message_id for r in rows}) == len(booked)
    assert booked == {p.message_id for batch in batches for p in batch}

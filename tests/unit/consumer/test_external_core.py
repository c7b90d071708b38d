"""An external core through the core-banking port: it is called inside remit's transaction, after the
idempotency records are claimed and before remit commits; remit records what it said (its transfer id beside
the record), and whatever fails before remit's commit heals on the retry, which sends the same key."""

from datetime import UTC, datetime
from typing import Any

import pytest

from app.consumer.core_keys import transfer_key
from app.storage.ports.idempotency import NewKeyGeneration
from tests.fakes.core import FakeCore
from tests.fakes.database import FakeDatabase
from tests.unit.consumer.harness import add_tenant, relayed, running_consumer
from tests.utils.factories import make_message

POOR = "700000001"  # a creditor account the core refuses


@pytest.fixture
def core() -> FakeCore:
    return FakeCore(refusals={POOR: "insufficient_funds"})


async def test_a_booked_payment_is_recorded_with_the_cores_transfer_id(db: FakeDatabase, core: FakeCore) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant)
    async with running_consumer(db, core_banking=core) as consumer:
        assert await consumer.deliver(relayed(payment)) == [True]

    record = consumer.record(payment)
    assert record is not None
    assert record.core_transfer_id == core.journal[transfer_key(tenant, payment.message_id)].transfer_id
    assert consumer.ledger() == []  # the core keeps the books, not remit's embedded ledger
    assert consumer.republisher.published == []


async def test_a_refusal_is_dead_lettered_with_its_reason_and_leaves_no_record(
    db: FakeDatabase, core: FakeCore
) -> None:
    tenant = (await add_tenant(db)).tenant_id
    refused, booked = make_message(tenant_id=tenant, creditor_account=POOR), make_message(tenant_id=tenant)
    async with running_consumer(db, core_banking=core) as consumer:
        assert await consumer.deliver(relayed(refused), relayed(booked)) == [True, True]

    assert consumer.reasons() == ["insufficient_funds"]
    assert consumer.republisher.retried == []
    assert consumer.record(refused) is None
    assert consumer.record(booked) is not None


async def test_an_unknown_outcome_is_retried_and_the_retry_records_the_original_transfer_once(
    db: FakeDatabase, core: FakeCore
) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant)
    core.lose_answers = 1  # the core books it; the answer and the status query are lost
    async with running_consumer(db, core_banking=core) as consumer:
        assert await consumer.deliver(relayed(payment)) == [True]
        assert consumer.record(payment) is None
        [retry] = consumer.republisher.retried
        assert retry.payment.retry_count == 1
        assert [a.error_type for a in consumer.attempts()] == ["CoreOutcomeUnknown"]

        assert await consumer.deliver(relayed(retry.payment)) == [True]

    key = transfer_key(tenant, payment.message_id)
    assert core.requests == [[key], [key]]  # the same key both times
    assert core.booked(payment) == 1
    record = consumer.record(payment)
    assert record is not None
    assert record.core_transfer_id == core.journal[key].transfer_id
    assert consumer.republisher.dead_lettered == []


async def test_a_crash_of_remits_commit_after_the_cores_heals_on_the_retry(db: FakeDatabase, core: FakeCore) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant)
    async with running_consumer(db, core_banking=core) as consumer:
        db.fail_commits = 1  # the core committed; remit's commit is lost
        await consumer.deliver(relayed(payment))
        assert core.booked(payment) == 1
        assert consumer.record(payment) is None
        [retry] = consumer.republisher.retried

        await consumer.deliver(relayed(retry.payment))

    assert core.booked(payment) == 1
    record = consumer.record(payment)
    assert record is not None
    assert record.core_transfer_id == core.journal[transfer_key(tenant, payment.message_id)].transfer_id


async def test_the_core_down_is_a_retryable_failure_that_books_nothing(db: FakeDatabase, core: FakeCore) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant)
    core.down = True
    async with running_consumer(db, core_banking=core) as consumer:
        await consumer.deliver(relayed(payment))

    assert [a.error_type for a in consumer.attempts()] == ["CoreBankingUnavailable"]
    assert len(consumer.republisher.retried) == 1
    assert core.journal == {}
    assert consumer.record(payment) is None


async def test_only_payments_claimed_now_reach_the_core(db: FakeDatabase, core: FakeCore) -> None:
    tenant = (await add_tenant(db)).tenant_id
    paid, new = make_message(tenant_id=tenant), make_message(tenant_id=tenant)
    async with running_consumer(db, core_banking=core) as consumer:
        await consumer.deliver(relayed(paid))
        assert await consumer.deliver(relayed(paid), relayed(new)) == [True, True]

    assert core.requests == [[transfer_key(tenant, paid.message_id)], [transfer_key(tenant, new.message_id)]]
    assert consumer.reasons() == []


# The consumer pointed at an external core (REMIT_CORE_BANKING_URL): it sends each payment under its latest key.
AT_A_CORE: dict[str, Any] = {"core_banking_url": "http://core.test", "core_banking_token": "t" * 40}


async def test_a_payment_goes_under_its_latest_key_generation_and_its_record_says_which(
    db: FakeDatabase, core: FakeCore
) -> None:
    """Refused for good under its first key; the cause fixed, a forced replay opened generation 2 (recorded beside
    the message_id, app/deadletters/replay.py): the same payment, message_id and all, is booked under the second
    key, once, and remit's record names the generation. A later copy is a duplicate: nothing is sent."""
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant, creditor_account=POOR)
    first, second = transfer_key(tenant, payment.message_id), transfer_key(tenant, payment.message_id, 2)
    async with running_consumer(db, core_banking=core, **AT_A_CORE) as consumer:
        assert await consumer.deliver(relayed(payment)) == [True]
        assert consumer.reasons() == ["insufficient_funds"]
        core.refusals.clear()  # the debtor funded: only a new key can tell the core
        async with consumer.uow(tenant) as uow:
            opened = NewKeyGeneration(
                tenant, payment.message_id, 2, first, "insufficient_funds", "alice", 1, 1, datetime.now(UTC)
            )
            assert await uow.idempotency.open_key_generation(opened)
            await uow.commit()
        assert await consumer.deliver(relayed(payment)) == [True]
        assert await consumer.deliver(relayed(payment)) == [True]

    assert core.requests == [[first], [second]]
    assert (core.refused[first], core.booked(payment)) == ("insufficient_funds", 1)
    record = consumer.record(payment)
    assert record is not None
    assert (record.core_transfer_id, record.core_key_generation) == (core.journal[second].transfer_id, 2)


async def test_the_embedded_ledger_reads_no_key_generation(db: FakeDatabase, core: FakeCore) -> None:
    """Without REMIT_CORE_BANKING_URL nothing outside remit remembers a key: no look-up, the first key."""
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant)
    async with running_consumer(db, core_banking=core) as consumer:
        async with consumer.uow(tenant) as uow:
            key = transfer_key(tenant, payment.message_id)
            await uow.idempotency.open_key_generation(
                NewKeyGeneration(tenant, payment.message_id, 2, key, None, "alice", None, None, datetime.now(UTC))
            )
            await uow.commit()
        assert await consumer.deliver(relayed(payment)) == [True]
    assert core.requests == [[key]]

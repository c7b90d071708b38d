"""A retryable failure goes round the delay queues with retry_count + 1, until the retries are used up."""

import pytest

from app.messaging import headers
from tests.fakes.database import FakeDatabase
from tests.support.core import FailureRules, RuledCore
from tests.unit.consumer.harness import SERVICE_LOGIN, add_tenant, direct, relayed, running_consumer
from tests.utils.factories import make_message

FLAKY = "555000111"  # a creditor account whose first attempts time out (the test-only core's flaky account)


@pytest.mark.parametrize(("retry_count", "level"), [(0, 0), (1, 1), (2, 2)])
async def test_a_timeout_is_retried_at_the_delay_of_its_retry_count(
    db: FakeDatabase, retry_count: int, level: int
) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant, creditor_account=FLAKY, retry_count=retry_count)
    async with running_consumer(db, RuledCore(FailureRules(flaky_accounts={FLAKY: 10}))) as consumer:
        assert await consumer.deliver(relayed(payment)) == [True]

    [retry] = consumer.republisher.retried
    assert retry.level == level
    assert retry.payment == make_message(**{**dict(payment), "retry_count": retry_count + 1})
    assert retry.origin == {headers.PUBLISHED_BY: SERVICE_LOGIN, headers.IDENTITY_TENANT: tenant}
    [attempt] = consumer.attempts()
    assert (attempt.attempt, attempt.outcome, attempt.error_type, attempt.tenant_id) == (
        retry_count + 1,
        "retrying",
        "CoreBankingTimeout",
        tenant,
    )
    # Nothing booked, and no idempotency record left behind: the retry must not look like a duplicate.
    assert consumer.ledger() == []
    assert consumer.record(payment) is None
    assert consumer.republisher.dead_lettered == []


async def test_past_the_last_delay_a_retry_waits_the_longest_delay_again(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant, creditor_account=FLAKY, retry_count=2)
    async with running_consumer(
        db, RuledCore(FailureRules(flaky_accounts={FLAKY: 10})), retry_delays_seconds=[1.0, 5.0]
    ) as consumer:
        await consumer.deliver(relayed(payment))

    assert [r.level for r in consumer.republisher.retried] == [1]


async def test_at_max_retries_the_payment_is_dead_lettered_as_retries_exhausted(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    last_retry = make_message(tenant_id=tenant, creditor_account=FLAKY, retry_count=2)
    exhausted = make_message(tenant_id=tenant, creditor_account=FLAKY, retry_count=3)
    async with running_consumer(db, RuledCore(FailureRules(flaky_accounts={FLAKY: 10}))) as consumer:
        assert await consumer.deliver(relayed(last_retry), relayed(exhausted)) == [True, True]

    assert [r.payment.message_id for r in consumer.republisher.retried] == [last_retry.message_id]
    assert consumer.reasons() == ["retries_exhausted"]
    dead = consumer.republisher.dead_lettered[0]
    assert dead.delivery.message_id == str(exhausted.message_id)
    assert dead.headers[headers.ATTEMPTS] == 4
    assert dead.headers[headers.ERROR_TYPE] == "CoreBankingTimeout"
    assert [(a.attempt, a.outcome) for a in consumer.attempts()] == [(3, "retrying"), (4, "dead_lettered")]


async def test_with_no_retries_allowed_the_first_timeout_is_dead_lettered(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant, creditor_account=FLAKY)
    async with running_consumer(db, RuledCore(FailureRules(flaky_accounts={FLAKY: 10})), max_retries=0) as consumer:
        await consumer.deliver(relayed(payment))

    assert consumer.republisher.retried == []
    assert consumer.reasons() == ["retries_exhausted"]


async def test_the_retried_copy_is_booked_once_the_failure_has_passed(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant, creditor_account=FLAKY)
    async with running_consumer(db, RuledCore(FailureRules(flaky_accounts={FLAKY: 1}))) as consumer:
        await consumer.deliver(relayed(payment))
        [retry] = consumer.republisher.retried
        assert await consumer.deliver(relayed(retry.payment)) == [True]

    [booked] = consumer.ledger()
    assert booked.payment.retry_count == 1
    record = consumer.record(payment)
    assert record is not None
    assert record.attempt == 2


async def test_a_replays_retry_carries_the_dead_letter_it_replays_and_a_tenants_claim_does_not(
    db: FakeDatabase,
) -> None:
    # Its failure at the end of the retries is then filed as the new failure it is, not folded into the dead letter
    # it replayed (app/deadletters/incoming.py dedup_key).
    tenant = (await add_tenant(db)).tenant_id
    replay = make_message(tenant_id=tenant, creditor_account=FLAKY)
    claimed = make_message(tenant_id=tenant, creditor_account=FLAKY)
    chain = {headers.TENANT: tenant, headers.REPLAY_OF: 41}
    async with running_consumer(db, RuledCore(FailureRules(flaky_accounts={FLAKY: 10}))) as consumer:
        await consumer.deliver(relayed(replay, headers=chain), direct(claimed, headers=chain))

    origins = {r.payment.message_id: r.origin for r in consumer.republisher.retried}
    assert origins[replay.message_id][headers.REPLAY_OF] == 41
    assert headers.REPLAY_OF not in origins[claimed.message_id]

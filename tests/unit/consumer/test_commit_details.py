"""The group committer's details a broken rule would change quietly: processed or duplicate (the outcome an
operator counts), how many submissions one flush takes, no call to the core when nothing is new, the errors
it reports, its stage timings, and stopping."""

import asyncio
import logging
import time

import pytest

from app.consumer.committer import GroupCommitter, Outcome
from app.consumer.core_keys import transfer_key
from app.errors import CommitFailed
from app.messaging import headers
from app.observability.metrics import Metrics
from tests.fakes.core import FakeCore
from tests.fakes.database import FakeDatabase
from tests.fakes.unit_of_work import fake_uow_factory
from tests.unit.consumer.harness import QUEUE, Consumer, add_tenant, direct, relayed, running_consumer
from tests.utils.factories import make_message, new_tenant_id


def _outcomes(metrics: Metrics, tenant: str) -> dict[str, float | None]:
    return {
        outcome: metrics.registry.get_sample_value(
            "remit_outcomes_total", {"queue": QUEUE, "tenant": tenant, "outcome": outcome}
        )
        for outcome in ("processed", "duplicate")
    }


async def test_a_first_delivery_is_processed_and_a_second_a_duplicate(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment, other = make_message(tenant_id=tenant), make_message(tenant_id=tenant)
    metrics = Metrics()
    async with running_consumer(db, metrics=metrics) as consumer:
        await consumer.deliver(relayed(payment))
        assert _outcomes(metrics, tenant) == {"processed": 1, "duplicate": None}
        await consumer.deliver(relayed(payment), relayed(other))
        assert _outcomes(metrics, tenant) == {"processed": 2, "duplicate": 1}


async def test_the_committer_says_processed_or_duplicate_per_payment(consumer: Consumer, tenant: str) -> None:
    paid, new = make_message(tenant_id=tenant), make_message(tenant_id=tenant)
    assert await consumer.committer.commit_many([paid]) == [Outcome.PROCESSED]
    copy = make_message(**dict(new))  # another delivery of it in the same flush
    outcomes = await consumer.committer.commit_many([new, paid, copy])
    assert outcomes == [Outcome.PROCESSED, Outcome.DUPLICATE, Outcome.DUPLICATE]


@pytest.mark.parametrize(("max_batch", "flushes"), [(1, 3), (2, 2), (3, 1)])
async def test_a_flush_takes_queued_submissions_until_it_holds_commit_batch_max(
    db: FakeDatabase, max_batch: int, flushes: int
) -> None:
    tenant = (await add_tenant(db)).tenant_id
    async with running_consumer(db, commit_batch_max=max_batch) as consumer:
        # Three workers' batches of one, all queued before the flusher wakes.
        submissions = [consumer.committer.commit_many([make_message(tenant_id=tenant)]) for _ in range(3)]
        await asyncio.gather(*submissions)

    assert len([uow for uow in consumer.opened if uow.tenant_id == tenant]) == flushes
    assert len(consumer.ledger(tenant)) == 3


async def test_the_core_is_not_called_when_a_flush_holds_nothing_new(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant)
    core = FakeCore()
    async with running_consumer(db, core_banking=core) as consumer:
        await consumer.deliver(relayed(payment))
        await consumer.deliver(relayed(payment))

    assert core.requests == [[transfer_key(tenant, payment.message_id)]]


async def test_a_commit_lost_as_a_whole_says_so(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    async with running_consumer(db) as consumer:
        db.fail_commits = 1
        await consumer.deliver(relayed(make_message(tenant_id=tenant)))

    [attempt] = consumer.attempts()
    assert (attempt.error_type, attempt.error_message) == ("CommitFailed", "commit failed: ConnectionResetError")


async def test_an_unknown_tenant_is_named(consumer: Consumer) -> None:
    stranger = new_tenant_id()
    await consumer.deliver(relayed(make_message(tenant_id=stranger)))

    [attempt] = consumer.attempts()
    assert attempt.error_message == f"tenant {stranger!r} is not known to remit"
    assert attempt.queue == QUEUE


async def test_the_commit_stages_are_timed(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    metrics = Metrics()
    async with running_consumer(db, metrics=metrics) as consumer:
        await consumer.deliver(relayed(make_message(tenant_id=tenant)))

    for stage in ("commit_wait", "commit"):
        count = metrics.registry.get_sample_value("remit_batch_stage_seconds_count", {"stage": stage})
        total = metrics.registry.get_sample_value("remit_batch_stage_seconds_sum", {"stage": stage})
        assert count == 1, stage
        assert total is not None
        assert 0 <= total < 60, (stage, total)  # a duration, not a sum of two clock readings


async def test_a_stopped_committer_commits_nothing(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    async with running_consumer(db) as consumer:
        assert consumer.committer.running()
    assert not consumer.committer.running()
    with pytest.raises(CommitFailed, match="the group committer is not running"):
        await consumer.committer.commit_many([make_message(tenant_id=tenant)])


async def test_with_the_committer_down_every_payment_is_retried(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payments = [make_message(tenant_id=tenant) for _ in range(2)]
    async with running_consumer(db) as consumer:
        await consumer.committer.stop()
        assert await consumer.deliver(*map(relayed, payments)) == [True, True]

    assert [r.payment.message_id for r in consumer.republisher.retried] == [p.message_id for p in payments]
    assert {(a.error_type, a.error_message) for a in consumer.attempts()} == {
        ("CommitFailed", "the group committer is not running")
    }


@pytest.mark.parametrize("publisher", ["direct", "relayed"])
async def test_a_tenant_added_after_the_consumer_started_is_held_to_its_limits_at_its_first_delivery(
    db: FakeDatabase, publisher: str
) -> None:
    """The consumer's copy of the tenants is read at its first batch; a tenant its publisher's identity vouches
    for (its own user, or the tenant a trusted publisher names) is looked up when first seen, so its own
    limits hold from its first payment: here a message size of 200 bytes."""
    first = (await add_tenant(db)).tenant_id
    async with running_consumer(db, tenant_refresh_seconds=3600) as consumer:
        await consumer.deliver(relayed(make_message(tenant_id=first)))
        late = (await add_tenant(db, max_message_bytes=200)).tenant_id
        payment = make_message(tenant_id=late)
        delivery = direct(payment) if publisher == "direct" else relayed(payment)
        assert await consumer.deliver(delivery) == [True]

    assert consumer.reasons() == ["oversize"]
    assert consumer.ledger(late) == []


async def test_a_failure_that_cannot_be_recorded_is_logged_with_its_message_id(
    consumer: Consumer, caplog: pytest.LogCaptureFixture
) -> None:
    consumer.republisher.fail = True
    delivery = relayed(make_message(tenant_id=new_tenant_id()))  # an unknown tenant: dead-lettered
    with caplog.at_level(logging.ERROR, logger="remit.consumer"):
        assert await consumer.deliver(delivery) == [False]

    [record] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert record.getMessage() == f"could not record the failure of {delivery.message_id}; it goes back to the queue"


async def test_each_delivery_is_counted_and_a_processed_ones_latency_observed(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    paid, ahead, unstamped = (make_message(tenant_id=tenant) for _ in range(3))
    now_ms = int(time.time() * 1000)

    def stamped(ms: float) -> dict[str, object]:
        return {headers.TENANT: tenant, headers.PUBLISHED_AT: ms}

    metrics = Metrics()
    async with running_consumer(db, metrics=metrics) as consumer:
        await consumer.deliver(relayed(paid, headers=stamped(now_ms - 2000)))  # published 2 s ago
        await consumer.deliver(
            relayed(paid, headers=stamped(now_ms - 30_000)),  # a duplicate: no latency of its own
            relayed(ahead, headers=stamped(now_ms + 3_600_000)),  # a publisher's clock an hour ahead: 0 s
            relayed(unstamped),
            relayed(make_message(tenant_id=tenant), headers={headers.TENANT: 7}),  # a header that is not a name
        )
        await consumer.deliver(  # stamps that are no time at all: counted, no latency (a NaN sum stays NaN)
            relayed(make_message(tenant_id=tenant), headers=stamped(float("nan"))),
            relayed(make_message(tenant_id=tenant), headers=stamped(float("-inf"))),
        )

    def sample(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(name, labels)

    assert sample("remit_consumed_total", queue=QUEUE, tenant=tenant) == 6
    assert sample("remit_consumed_total", queue=QUEUE, tenant="unknown") == 1
    assert sample("remit_outcomes_total", queue=QUEUE, tenant=tenant, outcome="processed") == 5
    assert sample("remit_outcomes_total", queue=QUEUE, tenant=tenant, outcome="duplicate") == 1
    assert sample("remit_publish_to_processed_seconds_count", tenant=tenant) == 2  # the processed stamped ones
    assert sample("remit_publish_to_processed_seconds_bucket", tenant=tenant, le="0.005") == 1  # the one ahead
    latency = sample("remit_publish_to_processed_seconds_sum", tenant=tenant)
    assert latency is not None
    assert 2 <= latency < 30


async def test_a_direct_publishers_stamp_is_a_claim_and_no_latency(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    hour_ago = {headers.TENANT: tenant, headers.PUBLISHED_AT: int(time.time() * 1000) - 3_600_000}
    metrics = Metrics()
    async with running_consumer(db, metrics=metrics) as consumer:
        assert await consumer.deliver(direct(make_message(tenant_id=tenant), headers=hour_ago)) == [True]

    processed = {"queue": QUEUE, "tenant": tenant, "outcome": "processed"}
    assert metrics.registry.get_sample_value("remit_outcomes_total", processed) == 1
    assert metrics.registry.get_sample_value("remit_publish_to_processed_seconds_count", {"tenant": tenant}) is None


async def test_a_committer_never_started_commits_nothing(db: FakeDatabase) -> None:
    committer = GroupCommitter(fake_uow_factory(db), FakeCore(), max_batch=10)
    assert not committer.running()
    with pytest.raises(CommitFailed, match="the group committer is not running"):
        await committer.commit_many([make_message()])


async def test_stopping_fails_what_was_queued_so_no_worker_waits_forever(consumer: Consumer, tenant: str) -> None:
    queued = asyncio.create_task(consumer.committer.commit_many([make_message(tenant_id=tenant)]))
    await asyncio.sleep(0)  # queued; the flusher is woken but has not taken it yet
    await consumer.committer.stop()

    with pytest.raises(CommitFailed, match=r"^the group committer stopped$"):
        await queued
    assert consumer.ledger() == []

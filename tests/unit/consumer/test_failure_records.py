"""What the consumer says about a failure, beyond where the delivery goes: the attempt it records, the retry's
delivery and time, the conflict it reports, the log line and the metrics an operator reads."""

import logging
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from app.bootstrap import build_consumer
from app.messaging import headers
from app.observability.metrics import Metrics
from app.storage.unit_of_work import UnitOfWork
from app.tenancy.broker_users import broker_user
from tests.fakes.core import FakeCore
from tests.fakes.database import FakeDatabase
from tests.fakes.republisher import FakeRepublisher
from tests.fakes.unit_of_work import FakeUnitOfWork
from tests.unit.consumer.harness import (
    QUEUE,
    VHOST,
    Consumer,
    add_tenant,
    direct,
    relayed,
    running_consumer,
    unit_settings,
)
from tests.utils.factories import make_message

LOGGER = "remit.consumer"
CLOSED = "999000111"  # the core refuses payments to it for good


def _sample(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


# ---------------------------------------------------------------- the attempt recorded


@pytest.mark.parametrize(
    ("message_id", "recorded"),
    [
        ("7f3a91bc-4e2d-4c8a-b1f0-9d3e2a1c5b7d", UUID("7f3a91bc-4e2d-4c8a-b1f0-9d3e2a1c5b7d")),
        ("not-a-uuid", None),
        ("", None),
        (None, None),
    ],
)
async def test_an_unreadable_delivery_is_recorded_as_its_first_attempt_under_its_header_id(
    consumer: Consumer, tenant: str, message_id: str | None, recorded: UUID | None
) -> None:
    delivery = relayed(make_message(tenant_id=tenant), body=b"not json", message_id=message_id)

    assert await consumer.deliver(delivery) == [True]

    [attempt] = consumer.attempts()
    assert (attempt.message_id, attempt.attempt, attempt.outcome) == (recorded, 1, "dead_lettered")
    assert consumer.republisher.dead_lettered[0].headers[headers.ATTEMPTS] == 1


async def test_a_failed_payment_is_recorded_under_its_own_id_at_the_time_it_failed(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant, creditor_account=CLOSED, retry_count=2)
    before = datetime.now(UTC)
    async with running_consumer(db, core_banking=FakeCore(refusals={CLOSED: "account_closed"})) as consumer:
        assert await consumer.deliver(relayed(payment, message_id=None)) == [True]

    [attempt] = consumer.attempts()
    assert (attempt.message_id, attempt.attempt, attempt.tenant_id) == (payment.message_id, 3, tenant)
    assert (attempt.queue, attempt.error_type) == (QUEUE, "AccountClosed")
    assert attempt.error_message == consumer.republisher.dead_lettered[0].headers[headers.ERROR_MESSAGE]
    assert attempt.error_message == (
        "core banking refused the transfer: the creditor account is closed in this currency (AC04)"
    )
    assert before <= attempt.at <= datetime.now(UTC)
    assert consumer.republisher.dead_lettered[0].headers[headers.ATTEMPTS] == 3


async def test_a_retry_carries_its_delivery_and_the_time_it_failed(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant)
    delivery = relayed(payment)
    before = datetime.now(UTC)
    async with running_consumer(db, core_banking=FakeCore(down=True)) as consumer:
        assert await consumer.deliver(delivery) == [True]

    [retry] = consumer.republisher.retried
    assert retry.delivery == delivery
    assert before <= retry.now <= datetime.now(UTC)
    [attempt] = consumer.attempts()
    assert (attempt.attempt, attempt.outcome, attempt.error_type) == (1, "retrying", "CoreBankingUnavailable")


# ---------------------------------------------------------------- an expired copy: paid already, or expired


async def test_whether_an_expired_copy_was_paid_is_read_in_its_tenants_scope(consumer: Consumer, tenant: str) -> None:
    paid = make_message(tenant_id=tenant, timestamp_utc=datetime.now(UTC) - timedelta(hours=1, minutes=1))
    await consumer.deliver(relayed(paid))
    opened = len(consumer.opened)

    assert await consumer.deliver(relayed(make_message(**{**dict(paid), "ttl_seconds": 3600}))) == [True]

    assert [uow.tenant_id for uow in consumer.opened[opened:]] == [tenant]
    assert consumer.republisher.dead_lettered == []


class _IdempotencyReadFails(FakeUnitOfWork):
    """A tenant's transaction cannot be opened (its idempotency records cannot be read); the system scope,
    where attempts are recorded, works."""

    async def __aenter__(self) -> "_IdempotencyReadFails":
        if self.tenant_id is not None:
            raise ConnectionError("connection to the database was lost")
        await super().__aenter__()
        return self


async def test_an_expired_copy_whose_idempotency_check_fails_is_retried_never_dropped() -> None:
    db = FakeDatabase()
    tenant = (await add_tenant(db)).tenant_id
    late = make_message(tenant_id=tenant, timestamp_utc=datetime.now(UTC) - timedelta(hours=2), ttl_seconds=3600)
    republisher = FakeRepublisher()

    def factory(tenant_id: str | None = None) -> UnitOfWork:
        return _IdempotencyReadFails(db, tenant_id)

    services = build_consumer(unit_settings(), factory, republisher=republisher)
    await services.committer.start()
    try:
        assert await services.processor.process_batch([relayed(late)]) == [True]
    finally:
        await services.committer.stop()

    [retry] = republisher.retried
    assert retry.payment.message_id == late.message_id
    [attempt] = db.rows("delivery_attempts")
    assert (attempt.error_type, attempt.error_message) == (
        "RetryableError",
        "the idempotency check failed: ConnectionError",
    )


# ---------------------------------------------------------------- a used message_id


async def test_after_a_conflicting_copy_a_true_copy_in_the_same_flush_is_a_duplicate(
    consumer: Consumer, tenant: str
) -> None:
    """The first copy in a flush conflicts with the recorded payment; a later copy is compared with what was
    recorded (not with the conflicting copy): the same payment again is a duplicate, not a second conflict."""
    first = make_message(tenant_id=tenant, creditor_account="111111111")
    await consumer.deliver(relayed(first))
    other = make_message(**{**dict(first), "creditor_account": "222222222"})

    assert await consumer.deliver(relayed(other), relayed(first)) == [True, True]

    assert len(consumer.ledger()) == 1
    assert consumer.reasons() == ["duplicate_conflict"]
    [dead] = consumer.republisher.dead_lettered
    assert dead.delivery.body == other.to_wire()
    assert dead.headers[headers.ERROR_MESSAGE].endswith(
        f"was already used by tenant {tenant!r} for a different payment (reference, amount, currency, accounts "
        "or batch differ): resubmit it with a new message_id"
    )


# ---------------------------------------------------------------- the log line and the metrics


async def test_a_dead_letter_is_logged_and_counted_under_the_tenant_identity_decided(
    db: FakeDatabase, caplog: pytest.LogCaptureFixture
) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant, creditor_account=CLOSED, retry_count=1)
    metrics = Metrics()
    core = FakeCore(refusals={CLOSED: "account_closed"})
    async with running_consumer(db, core_banking=core, metrics=metrics) as consumer:
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            assert await consumer.deliver(relayed(payment, message_id=None)) == [True]

    [record] = [r for r in caplog.records if r.name == LOGGER]
    assert record.getMessage() == (
        f"payment {payment.message_id}: dead_lettered (AccountClosed: core banking refused the transfer: the "
        "creditor account is closed in this currency (AC04))"
    )
    extra: dict[str, Any] = record.__dict__
    assert (extra["message_id"], extra["tenant_id"], extra["correlation_id"], extra["attempt"]) == (
        str(payment.message_id),
        tenant,
        payment.correlation_id,
        2,
    )
    outcome = {"queue": QUEUE, "tenant": tenant}
    assert _sample(metrics, "remit_outcomes_total", **outcome, outcome="dead_lettered") == 1
    assert _sample(metrics, "remit_dead_lettered_total", **outcome, reason="account_closed") == 1
    assert _sample(metrics, "remit_quarantined_total", tenant=tenant) is None


async def test_an_unreadable_delivery_is_logged_under_its_header_id(
    consumer: Consumer, tenant: str, caplog: pytest.LogCaptureFixture
) -> None:
    delivery = relayed(make_message(tenant_id=tenant), body=b"not json", message_id="m-1")
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        await consumer.deliver(delivery)

    [record] = [r for r in caplog.records if r.name == LOGGER]
    assert record.getMessage().startswith("payment m-1: dead_lettered (InvalidMessage: ")
    extra: dict[str, Any] = record.__dict__
    assert (extra["message_id"], extra["tenant_id"], extra["correlation_id"], extra["attempt"]) == (
        "m-1",
        tenant,
        None,
        1,
    )


async def test_a_retry_is_counted_as_retrying_without_a_dead_letter_reason(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    metrics = Metrics()
    async with running_consumer(db, core_banking=FakeCore(down=True), metrics=metrics) as consumer:
        await consumer.deliver(relayed(make_message(tenant_id=tenant)))

    assert _sample(metrics, "remit_outcomes_total", queue=QUEUE, tenant=tenant, outcome="retrying") == 1
    assert metrics.registry.get_sample_value("remit_dead_lettered_total", {}) is None
    dead_lettered = [s for m in metrics.registry.collect() if m.name == "remit_dead_lettered" for s in m.samples]
    assert dead_lettered == []


async def test_a_quarantined_message_is_a_security_event_logged_and_counted_under_the_publishers_tenant(
    db: FakeDatabase, caplog: pytest.LogCaptureFixture
) -> None:
    attacker = (await add_tenant(db)).tenant_id
    victim = (await add_tenant(db)).tenant_id
    forged = direct(make_message(tenant_id=victim), user_id=broker_user(attacker, VHOST))
    metrics = Metrics()
    async with running_consumer(db, metrics=metrics) as consumer:
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            assert await consumer.deliver(forged) == [True]

    [event] = [r for r in caplog.records if r.getMessage().startswith("security event")]
    [attempt] = consumer.attempts()
    assert event.getMessage() == (
        f"security event: quarantined a message published by {broker_user(attacker, VHOST)}, filed under tenant "
        f"{attacker} ({attempt.error_message})"
    )
    assert (event.__dict__["tenant_id"], event.__dict__["message_id"]) == (attacker, forged.message_id)
    assert _sample(metrics, "remit_quarantined_total", tenant=attacker) == 1
    assert _sample(metrics, "remit_dead_lettered_total", queue=QUEUE, tenant=attacker, reason="tenant_mismatch") == 1


async def test_a_quarantined_message_without_a_publisher_says_nobody_published_it(
    consumer: Consumer, db_tenants: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    ours, theirs = db_tenants
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        await consumer.deliver(relayed(make_message(tenant_id=theirs), user_id=None, routing_key=f"{ours}.payment"))

    [event] = [r for r in caplog.records if r.getMessage().startswith("security event")]
    assert event.getMessage().startswith(
        f"security event: quarantined a message published by nobody (no user_id), filed under tenant {ours} ("
    )

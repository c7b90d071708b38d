"""What can never succeed is dead-lettered at once with its reason: the attempt recorded first, nothing booked,
no retry. The business rules are the consumer's too: a direct publisher never passed ingress."""

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.consumer.delivery import Delivery
from app.messaging import headers
from contracts import PaymentMessage
from tests.fakes.database import FakeDatabase
from tests.fakes.unit_of_work import FakeUnitOfWork
from tests.support.core import FailureRules, RuledCore
from tests.unit.consumer.harness import (
    Consumer,
    add_tenant,
    direct,
    expired_payment,
    relayed,
    running_consumer,
    truncated,
    wire,
)
from tests.utils.factories import make_message, new_tenant_id


def only_dead_letter(consumer: Consumer) -> tuple[str, str]:
    """(reason, error type) of the one dead letter, after checking nothing else happened to the payment."""
    assert consumer.ledger() == []
    assert consumer.republisher.retried == []
    [dead] = consumer.republisher.dead_lettered
    [attempt] = consumer.attempts()
    assert (attempt.outcome, attempt.error_type) == ("dead_lettered", dead.headers[headers.ERROR_TYPE])
    return dead.headers[headers.REASON], dead.headers[headers.ERROR_TYPE]


def malformed(tenant: str) -> dict[str, Delivery]:
    payment = make_message(tenant_id=tenant)
    mid = str(payment.message_id)
    return {
        "not json": relayed(payment, body=b"{not json"),
        "a float amount": relayed(payment, body=wire(payment, amount_cents=12.5)),
        "a string amount": relayed(payment, body=wire(payment, amount_cents="1000")),
        "an unknown currency": relayed(payment, body=wire(payment, currency="ABC")),
        "a naive timestamp": relayed(payment, body=wire(payment, timestamp_utc="2026-01-01T00:00:00")),
        "an unknown field": relayed(payment, body=wire(payment, note="hi")),
        "another content type": relayed(payment, content_type="text/plain"),
        "an AMQP message_id other than the body's": relayed(
            payment, message_id=mid[:-1] + ("0" if mid[-1] != "0" else "1")
        ),
    }


@pytest.mark.parametrize("case", list(malformed("t0000000")))
async def test_a_message_that_is_not_a_valid_payment_is_dead_lettered_as_invalid(
    consumer: Consumer, tenant: str, case: str
) -> None:
    assert await consumer.deliver(malformed(tenant)[case]) == [True]

    assert only_dead_letter(consumer) == ("invalid", "InvalidMessage")


async def test_a_closed_account_is_dead_lettered_at_once_not_retried(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant, creditor_account="999000111")
    async with running_consumer(db, RuledCore(FailureRules(closed_accounts=["999000111"]))) as consumer:
        assert await consumer.deliver(relayed(payment)) == [True]

    assert only_dead_letter(consumer) == ("account_closed", "AccountClosed")
    assert consumer.record(payment) is None


async def test_a_payment_of_a_tenant_remit_does_not_know_is_dead_lettered_as_unknown_tenant(consumer: Consumer) -> None:
    payment = make_message(tenant_id=new_tenant_id())

    assert await consumer.deliver(relayed(payment)) == [True]

    assert only_dead_letter(consumer) == ("unknown_tenant", "UnknownTenant")


async def test_an_expired_payment_is_dead_lettered_as_expired(consumer: Consumer, tenant: str) -> None:
    assert await consumer.deliver(relayed(expired_payment(tenant))) == [True]

    assert only_dead_letter(consumer) == ("expired", "MessageExpired")


async def test_an_expired_copy_of_a_payment_already_booked_is_a_duplicate(consumer: Consumer, tenant: str) -> None:
    paid = make_message(tenant_id=tenant, timestamp_utc=datetime.now(UTC) - timedelta(hours=1, minutes=1))
    await consumer.deliver(relayed(paid))
    # The same payment (the digest leaves out the envelope's time and the control block), its TTL run out.
    late = make_message(**{**dict(paid), "ttl_seconds": 3600})

    assert await consumer.deliver(relayed(late)) == [True]

    assert len(consumer.ledger()) == 1
    assert consumer.republisher.dead_lettered == []
    assert consumer.attempts() == []


def rule_breaking(tenant: str) -> dict[str, tuple[PaymentMessage, bool]]:
    """Payments at, and just past, each business rule's bound (the defaults: REMIT_MAX_AMOUNT_CENTS 100000000,
    REMIT_MAX_TTL_SECONDS 604800, REMIT_MAX_CLOCK_SKEW_SECONDS 300): (payment, passes)."""
    now = datetime.now(UTC)
    base: dict[str, Any] = {"tenant_id": tenant}
    checks = ["customer_exists", "bsb_valid", "limit_ok"]  # reference/004's: names recorded, none required
    return {
        "amount at the limit": (make_message(**base, amount_cents=100_000_000), True),
        "amount one cent over": (make_message(**base, amount_cents=100_000_001), False),
        "debtor is the creditor": (
            make_message(**base, creditor_bsb="012-345", creditor_account="123456789"),
            False,
        ),
        "same account number, other BSB": (make_message(**base, creditor_account="123456789"), True),
        "ttl at the limit": (make_message(**base, ttl_seconds=604_800), True),
        "ttl one second over": (make_message(**base, ttl_seconds=604_801), False),
        "timestamp 290 s ahead": (make_message(**base, timestamp_utc=now + timedelta(seconds=290)), True),
        "timestamp 310 s ahead": (make_message(**base, timestamp_utc=now + timedelta(seconds=310)), False),
        "not validated": (make_message(**base, validation_result={"passed": False, "checks": []}), False),
        "other check names than ingress writes": (
            make_message(**base, validation_result={"passed": True, "checks": checks}),
            True,
        ),
    }


@pytest.mark.parametrize("case", list(rule_breaking("t0000000")))
async def test_the_business_rules_hold_for_a_direct_publisher(db: FakeDatabase, case: str) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment, passes = rule_breaking(tenant)[case]
    async with running_consumer(db) as consumer:
        assert await consumer.deliver(direct(payment)) == [True]

    if passes:
        assert [r.payment for r in consumer.ledger()] == [payment]
        assert consumer.republisher.dead_lettered == []
    else:
        assert only_dead_letter(consumer) == ("invalid", "InvalidMessage")


@pytest.mark.parametrize(("allowed", "passes"), [(1, True), (0, False)])
async def test_a_body_over_its_tenants_message_size_is_oversize(db: FakeDatabase, allowed: int, passes: bool) -> None:
    tenant = (await add_tenant(db)).tenant_id
    payment = make_message(tenant_id=tenant)
    async with FakeUnitOfWork(db) as uow:  # operators set a tenant's limits
        await uow.tenants.update(tenant, max_message_bytes=len(payment.to_wire()) - 1 + allowed)
        await uow.commit()
    async with running_consumer(db) as consumer:
        await consumer.deliver(direct(payment))

    if passes:
        assert len(consumer.ledger()) == 1
    else:
        assert only_dead_letter(consumer) == ("oversize", "MessageTooLarge")


async def test_a_body_cut_on_arrival_is_oversize_and_travels_as_its_prefix(consumer: Consumer, tenant: str) -> None:
    payment = make_message(tenant_id=tenant)

    assert await consumer.deliver(truncated(payment, 65_537)) == [True]

    assert only_dead_letter(consumer) == ("oversize", "MessageTooLarge")
    dead = consumer.republisher.dead_lettered[0]
    assert dead.delivery.body == payment.to_wire()[:100]
    assert dead.delivery.evidence_headers()[headers.BODY_LENGTH] == 65_537


@pytest.mark.parametrize(
    "spelling",
    [str.upper, lambda mid: mid.replace("-", ""), lambda mid: "{" + mid + "}", lambda mid: "urn:uuid:" + mid],
    ids=["upper case", "no hyphens", "braces", "urn prefix"],
)
async def test_the_amqp_message_id_may_spell_the_bodys_id_any_way_uuid_reads_it(
    consumer: Consumer, tenant: str, spelling: Callable[[str], str]
) -> None:
    payment = make_message(tenant_id=tenant)

    assert await consumer.deliver(relayed(payment, message_id=spelling(str(payment.message_id)))) == [True]

    assert len(consumer.ledger(tenant)) == 1
    assert consumer.record(payment) is not None

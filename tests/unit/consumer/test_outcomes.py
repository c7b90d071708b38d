"""Processed, duplicate and duplicate_conflict: what one payment's message_id may do, decided in-process."""

from app.consumer.digest import payment_digest
from tests.unit.consumer.harness import Consumer, relayed
from tests.utils.factories import make_message


async def test_a_payment_is_booked_once_with_its_idempotency_record_and_settled(
    consumer: Consumer, tenant: str
) -> None:
    payment = make_message(tenant_id=tenant, retry_count=2)

    assert await consumer.deliver(relayed(payment)) == [True]

    [booked] = consumer.ledger()
    assert booked.payment == payment
    record = consumer.record(payment)
    assert record is not None
    assert (record.attempt, record.payment_digest, record.core_transfer_id) == (3, payment_digest(payment), None)
    assert consumer.republisher.published == []
    assert consumer.attempts() == []


async def test_the_same_payment_delivered_again_is_a_duplicate_acked_without_moving_money(
    consumer: Consumer, tenant: str
) -> None:
    payment = make_message(tenant_id=tenant)
    await consumer.deliver(relayed(payment))

    # A redelivery (a crash before the ack) and a retry's copy (retry_count and TTL differ) alike.
    again = await consumer.deliver(relayed(payment), relayed(make_message(**{**dict(payment), "retry_count": 1})))

    assert again == [True, True]
    assert len(consumer.ledger()) == 1
    assert consumer.republisher.dead_lettered == []


async def test_copies_of_one_payment_in_one_flush_book_it_once(consumer: Consumer, tenant: str) -> None:
    payment = make_message(tenant_id=tenant)

    assert await consumer.deliver(relayed(payment), relayed(payment), relayed(payment)) == [True, True, True]

    assert len(consumer.ledger()) == 1
    assert consumer.republisher.dead_lettered == []


async def test_a_used_message_id_with_other_content_in_a_later_flush_is_a_duplicate_conflict(
    consumer: Consumer, tenant: str
) -> None:
    first = make_message(tenant_id=tenant, amount_cents=1000)
    await consumer.deliver(relayed(first))
    other = make_message(**{**dict(first), "amount_cents": 1001})

    assert await consumer.deliver(relayed(other)) == [True]

    [booked] = consumer.ledger()
    assert booked.payment.amount_cents == 1000
    assert consumer.reasons() == ["duplicate_conflict"]
    [attempt] = consumer.attempts()
    assert (attempt.message_id, attempt.outcome, attempt.error_type) == (
        first.message_id,
        "dead_lettered",
        "ConflictingDuplicate",
    )


async def test_a_used_message_id_with_other_content_in_the_same_flush_is_a_duplicate_conflict(
    consumer: Consumer, tenant: str
) -> None:
    first = make_message(tenant_id=tenant, creditor_account="111111111")
    other = make_message(**{**dict(first), "creditor_account": "222222222"})

    assert await consumer.deliver(relayed(first), relayed(other), relayed(first)) == [True, True, True]

    [booked] = consumer.ledger()
    assert booked.payment.creditor_account == "111111111"
    assert consumer.reasons() == ["duplicate_conflict"]
    assert consumer.republisher.dead_lettered[0].delivery.body == other.to_wire()


async def test_two_tenants_using_one_message_id_are_two_payments(consumer: Consumer, db_tenants: list[str]) -> None:
    ours, theirs = db_tenants
    payment = make_message(tenant_id=ours)
    same_id = make_message(**{**dict(payment), "tenant_id": theirs, "amount_cents": 7})

    assert await consumer.deliver(relayed(payment), relayed(same_id)) == [True, True]

    assert {(r.tenant_id, r.payment.amount_cents) for r in consumer.ledger()} == {(ours, 150_000), (theirs, 7)}
    assert consumer.reasons() == []

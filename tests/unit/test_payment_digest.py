"""Two copies of one payment have one digest; any change to what it moves gives another."""

from datetime import timedelta

import pytest

from app.consumer.digest import payment_digest
from tests.utils.factories import make_message


def test_retries_resends_and_ttl_do_not_change_the_digest() -> None:
    payment = make_message()
    resent = payment.model_copy(update={"timestamp_utc": payment.timestamp_utc + timedelta(seconds=5)})
    assert payment_digest(payment) == payment_digest(payment.with_retry())
    assert payment_digest(payment) == payment_digest(resent)
    assert payment_digest(payment) == payment_digest(payment.model_copy(update={"ttl_seconds": 60}))


@pytest.mark.parametrize(
    "change",
    [
        {"amount_cents": 150_001},
        {"currency": "NZD"},
        {"payment_reference": "PAY-OTHER"},
        {"correlation_id": "bulk_other_batch"},
        {"debtor_bsb": "012-346"},
        {"debtor_account": "123456780"},
        {"creditor_bsb": "033-002"},
        {"creditor_account": "987654320"},
    ],
)
def test_what_the_payment_moves_changes_the_digest(change: dict[str, object]) -> None:
    payment = make_message(amount_cents=150_000)
    assert payment_digest(payment) != payment_digest(payment.model_copy(update=change))


def test_the_digest_of_a_payment_never_changes_between_versions() -> None:
    """Digests are stored beside the idempotency records: a new way of computing them would make every
    redelivery of a payment recorded before an upgrade a duplicate conflict. So the value is written out."""
    payment = make_message(
        message_id="7f3a91bc-4e2d-4c8a-b1f0-9d3e2a1c5b7d",
        tenant_id="anz",
        correlation_id="bulk_anz_20250501_batch_0042",
        payment_reference="PAY-ANZ-2025-00198432",
        amount_cents=150_000,
        currency="AUD",
        debtor_bsb="012-345",
        debtor_account="123456789",
        creditor_bsb="033-001",
        creditor_account="987654321",
    )
    assert payment_digest(payment).hex() == "ddc7a6360c1013d0163a73e6c4583e7d35afb9ac4128def0f8f25ee219121b76"

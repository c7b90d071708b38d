"""The AMQP expiration remit computes (relay, retries, replays) stays within what RabbitMQ accepts.

RabbitMQ 3.10 refuses an expiration over 315,360,000,000 ms and closes the channel; remit caps it at
4,294,967,295 ms (2^32 - 1, 49.7 days), above the contract's longest TTL (30 days)."""

from datetime import UTC, datetime, timedelta

import pytest

from app.messaging.properties import OutboundPayment, amqp_message, amqp_properties, expiration
from tests.utils.factories import make_message

NOW = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)
CAP = timedelta(milliseconds=4_294_967_295)


@pytest.mark.parametrize(
    ("remaining", "expected"),
    [
        (timedelta(days=1), timedelta(days=1)),
        (timedelta(days=30, seconds=300), timedelta(days=30, seconds=300)),  # the longest a valid payment has
        (CAP - timedelta(milliseconds=1), CAP - timedelta(milliseconds=1)),
        (CAP, CAP),
        (CAP + timedelta(milliseconds=1), CAP),
        (timedelta(days=365 * 73), CAP),
        (timedelta(0), timedelta(milliseconds=1)),  # already expired: the broker dead-letters it at once
        (-timedelta(hours=1), timedelta(milliseconds=1)),
    ],
)
def test_the_expiration_is_the_remaining_ttl_within_the_brokers_range(
    remaining: timedelta, expected: timedelta
) -> None:
    assert expiration(NOW + remaining, NOW) == expected


def test_a_year_2099_payment_gets_the_capped_expiration_in_milliseconds() -> None:
    payment = make_message(timestamp_utc=datetime(2099, 1, 1, tzinfo=UTC), ttl_seconds=86_400)
    message = amqp_message(OutboundPayment.of(payment), NOW, "remit")
    assert message.properties.expiration == "4294967295"


@pytest.mark.parametrize("ttl_seconds", [1, 86_400, 30 * 86_400])
@pytest.mark.parametrize("extra", [None, {"x-published-at": 1_795_000_000_000}])
def test_the_relays_properties_are_the_messages(ttl_seconds: int, extra: dict[str, int] | None) -> None:
    payment = OutboundPayment.of(make_message(timestamp_utc=NOW, ttl_seconds=ttl_seconds))
    later = NOW + timedelta(seconds=0.5)
    assert dict(amqp_properties(payment, later, "remit", extra)) == dict(
        amqp_message(payment, later, "remit", extra).properties
    )

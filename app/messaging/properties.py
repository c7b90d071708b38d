"""AMQP properties of a payment message, as the wire contract fixes them (DESIGN.md, 'The message')."""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import aio_pika
import aiormq

from app.messaging import headers
from contracts import PaymentMessage

CONTENT_TYPE = "application/json"
# A message already past its TTL is still published, with the shortest expiry, so that it reaches the
# dead-letter store as `expired` through the one path every expired message takes.
MIN_EXPIRATION = timedelta(milliseconds=1)
# RabbitMQ refuses a longer expiration and closes the publishing channel (3.10: more than 315,360,000,000
# ms, 406 PRECONDITION_FAILED, observed). 2^32 - 1 ms (49.7 days) is longer than any TTL the contract
# allows plus any sane clock skew, so clamping never expires a payment early; the consumer still checks
# the TTL written in the body.
MAX_EXPIRATION = timedelta(milliseconds=2**32 - 1)


@dataclass(frozen=True, slots=True)
class OutboundPayment:
    """What the AMQP properties are made of; the outbox stores exactly these next to the body."""

    message_id: UUID
    correlation_id: str
    tenant_id: str
    timestamp: datetime
    expires_at: datetime
    body: bytes

    @classmethod
    def of(cls, payment: PaymentMessage) -> "OutboundPayment":
        return cls(
            message_id=payment.message_id,
            correlation_id=payment.correlation_id,
            tenant_id=payment.tenant_id,
            timestamp=payment.timestamp_utc,
            expires_at=payment.expires_at,
            body=payment.to_wire(),
        )


def amqp_message(
    payment: OutboundPayment,
    now: datetime,
    user_id: str | None,
    extra_headers: Mapping[str, Any] | None = None,
) -> aio_pika.Message:
    return aio_pika.Message(
        body=payment.body,
        content_type=CONTENT_TYPE,
        delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        message_id=str(payment.message_id),
        correlation_id=payment.correlation_id,
        timestamp=payment.timestamp,
        expiration=expiration(payment.expires_at, now),
        headers={headers.TENANT: payment.tenant_id, **(extra_headers or {})},
        user_id=user_id,
    )


def amqp_properties(
    payment: OutboundPayment,
    now: datetime,
    user_id: str | None,
    extra_headers: Mapping[str, Any] | None = None,
) -> aiormq.spec.Basic.Properties:
    """`amqp_message(...).properties` without the aio_pika.Message in between, for the relay's hot path
    (an aio_pika.Message checks a lock on each of its attribute writes: a quarter of the relay's CPU time).
    tests/unit/test_expiration.py holds the two equal."""
    return aiormq.spec.Basic.Properties(
        content_type=CONTENT_TYPE,
        delivery_mode=aio_pika.DeliveryMode.PERSISTENT.value,
        priority=0,
        correlation_id=payment.correlation_id,
        expiration=str(int(expiration(payment.expires_at, now).total_seconds() * 1000)),
        headers={headers.TENANT: payment.tenant_id, **(extra_headers or {})},
        message_id=str(payment.message_id),
        timestamp=payment.timestamp,
        user_id=user_id,
    )


def expiration(expires_at: datetime, now: datetime) -> timedelta:
    """The AMQP expiration for a payment: its remaining TTL, within what RabbitMQ accepts."""
    return min(max(expires_at - now, MIN_EXPIRATION), MAX_EXPIRATION)

"""Putting a replayed payment back on the payments exchange exactly as the relay publishes it."""

import json
from datetime import datetime
from typing import Protocol

import aio_pika
from aio_pika.abc import AbstractChannel, AbstractExchange

from app.messaging import headers
from app.messaging.properties import OutboundPayment, amqp_message
from app.messaging.topology import routing_key
from contracts import PaymentMessage


class ReplayPublisher(Protocol):
    async def publish(self, message: aio_pika.Message, routing_key: str) -> None: ...


class DryRunPublisher:
    """Handed to dry runs, so a bug in the replay rules could never publish during a preview."""

    async def publish(self, message: aio_pika.Message, routing_key: str) -> None:
        raise AssertionError("a dry run never publishes")


class AmqpReplayPublisher:
    """Publishes with confirms on a channel that raises on unroutable messages (publisher_channel)."""

    def __init__(self, channel: AbstractChannel, exchange_name: str) -> None:
        self._channel = channel
        self._exchange_name = exchange_name
        self._exchange: AbstractExchange | None = None

    async def publish(self, message: aio_pika.Message, routing_key: str) -> None:
        if self._exchange is None:
            self._exchange = await self._channel.get_exchange(self._exchange_name, ensure=True)
        await self._exchange.publish(message, routing_key=routing_key, mandatory=True)


def fresh_body(original: bytes) -> bytes:
    """The original body with retry_count back at 0. Only the control block changes: the envelope and
    payload keep their original JSON values (re-serialising through the model could respell them)."""
    data = json.loads(original)
    data["retry_count"] = 0
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()


def replay_message(
    payment: PaymentMessage, body: bytes, dead_letter_id: int, user_id: str, now: datetime
) -> tuple[aio_pika.Message, str]:
    """The AMQP message and routing key of a replay: the relay's properties, the same message_id, and
    remit-replay-of naming the dead letter it came from."""
    outbound = OutboundPayment(
        message_id=payment.message_id,
        correlation_id=payment.correlation_id,
        tenant_id=payment.tenant_id,
        timestamp=payment.timestamp_utc,
        expires_at=payment.expires_at,
        body=body,
    )
    message = amqp_message(outbound, now, user_id, {headers.REPLAY_OF: dead_letter_id})
    return message, routing_key(payment.tenant_id)

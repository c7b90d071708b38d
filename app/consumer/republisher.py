"""Republish a failed delivery to a delay queue or the dead-letter exchange, with broker confirms."""

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import aio_pika
from aio_pika.abc import AbstractChannel

from app.consumer.delivery import Delivery
from app.messaging import headers
from app.messaging.properties import OutboundPayment, amqp_message
from app.messaging.topology import Topology, routing_key
from contracts import PaymentMessage


class AmqpRepublisher:
    def __init__(self, channel: AbstractChannel, topology: Topology, user_id: str) -> None:
        self._channel = channel
        self._topology = topology
        self._user_id = user_id

    async def to_retry(
        self, payment: PaymentMessage, delivery: Delivery, level: int, now: datetime, origin: Mapping[str, Any]
    ) -> None:
        extra = {headers.ORIGINAL_QUEUE: delivery.queue, **origin}
        message = amqp_message(OutboundPayment.of(payment), now, self._user_id, extra)
        exchange = await self._channel.get_exchange(self._topology.retry_queue(level), ensure=False)
        await exchange.publish(message, routing_key=routing_key(payment.tenant_id), mandatory=True)

    async def to_dead_letters(self, delivery: Delivery, message_headers: Mapping[str, Any]) -> None:
        # The original bytes go to the store untouched: it is evidence (the headers: failures.py). An
        # oversize body travels as the prefix kept on arrival, with its full length and SHA-256.
        message = aio_pika.Message(
            body=delivery.body,
            content_type=delivery.content_type,
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            message_id=delivery.message_id,
            headers={**message_headers, **delivery.evidence_headers()},
            user_id=self._user_id,
        )
        exchange = await self._channel.get_exchange(self._topology.dead_letter_exchange, ensure=False)
        await exchange.publish(message, routing_key=delivery.routing_key or "", mandatory=True)

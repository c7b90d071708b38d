"""The FastStream subscribers: thin entrypoints that hand each delivery to the PaymentProcessor.

A work queue is served by a pool of N subscribers (N AMQP consumers, each with its own channel and
prefetch); the tier pools are sized per tier, and a dedicated tenant queue gets the enterprise size.
"""

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Annotated, cast

from faststream import AckPolicy, Context
from faststream.rabbit import RabbitBroker, RabbitQueue
from faststream.rabbit.annotations import RabbitMessage
from faststream.rabbit.schemas import Channel
from faststream.rabbit.schemas.queue import QueueType, QuorumQueueArgs
from faststream.rabbit.subscriber import RabbitSubscriber

from app.bootstrap import ConsumerServices
from app.consumer.delivery import Delivery
from app.messaging.topology import Topology

log = logging.getLogger("remit.consumer")

Services = Annotated[ConsumerServices, Context("services")]

# When even the failure could not be recorded (database down), pause before the delivery goes back
# to the queue so an outage is not a hot redelivery loop; the quorum delivery limit is the backstop.
REQUEUE_PAUSE_SECONDS = 1.0


async def raw_body(message: RabbitMessage) -> bytes:
    # Decoding is ours: a malformed body must reach our intake (and the DLQ with a reason), not fail earlier.
    return message.body


def declared_queue(topology: Topology, name: str) -> RabbitQueue:
    return RabbitQueue(
        name,
        queue_type=QueueType.QUORUM,
        durable=True,
        arguments=cast("QuorumQueueArgs", topology.work_queue_arguments()),
    )


def register_pool(
    broker: RabbitBroker, topology: Topology, queue: str, workers: int, prefetch: int
) -> list[RabbitSubscriber]:
    subscribers = []
    for worker in range(workers):
        subscriber = broker.subscriber(
            declared_queue(topology, queue),
            channel=Channel(prefetch_count=prefetch),
            ack_policy=AckPolicy.NACK_ON_ERROR,
            decoder=raw_body,
            title=queue,
            include_in_schema=worker == 0,
            description="Processes each payment exactly once: idempotency record and ledger row in one "
            "transaction, ack after commit; failures go to delay queues or the dead-letter exchange.",
        )
        subscriber(_handler_for(queue))
        subscribers.append(subscriber)
    return subscribers


def _handler_for(queue: str) -> Callable[[bytes, RabbitMessage, ConsumerServices], Awaitable[None]]:
    async def handle_payment(body: bytes, message: RabbitMessage, services: Services) -> None:
        raw = message.raw_message
        delivery = Delivery(
            body=body,
            queue=queue,
            headers=dict(raw.headers or {}),
            content_type=raw.content_type,
            message_id=raw.message_id,
            user_id=raw.user_id,
            redelivered=bool(raw.redelivered),
            routing_key=raw.routing_key,
        )
        try:
            await services.processor.process(delivery)
        except Exception:
            log.exception("could not settle delivery %s; returning it to the queue", raw.message_id)
            await asyncio.sleep(REQUEUE_PAUSE_SECONDS)
            raise

    return handle_payment

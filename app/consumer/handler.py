"""The FastStream subscriber: a thin entrypoint that hands each delivery to the PaymentProcessor."""

import asyncio
import logging
from typing import Annotated, cast

from faststream import AckPolicy, Context
from faststream.rabbit import ExchangeType, RabbitBroker, RabbitExchange, RabbitQueue
from faststream.rabbit.annotations import RabbitMessage
from faststream.rabbit.schemas.queue import QueueType, QuorumQueueArgs

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


def work_queue(topology: Topology) -> RabbitQueue:
    return RabbitQueue(
        topology.work_queue,
        queue_type=QueueType.QUORUM,
        durable=True,
        arguments=cast("QuorumQueueArgs", topology.work_queue_arguments()),
        routing_key=topology.work_binding_key,
    )


def register_consumer(broker: RabbitBroker, topology: Topology) -> None:
    @broker.subscriber(
        work_queue(topology),
        RabbitExchange(topology.exchange, type=ExchangeType.TOPIC, durable=True),
        ack_policy=AckPolicy.NACK_ON_ERROR,
        decoder=raw_body,
        title="payments.work",
        description="Processes each payment exactly once: idempotency record and ledger row in one "
        "transaction, ack after commit; failures go to delay queues or the dead-letter exchange.",
    )
    async def handle_payment(body: bytes, message: RabbitMessage, services: Services) -> None:
        raw = message.raw_message
        delivery = Delivery(
            body=body,
            queue=topology.work_queue,
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

"""The AsyncAPI document's broker: what remit (and direct publishers) send, what it consumes, and where.

The relay and the republisher publish with aio-pika directly (confirms, batching), and queue workers
(app/consumer/worker.py) consume in batches on their own channels; the objects here make the same
channels, with their message schemas, part of the generated specification. This broker is never started.
"""

from typing import Any, cast

from faststream._internal.broker import BrokerUsecase
from faststream.rabbit import ExchangeType, RabbitBroker, RabbitExchange, RabbitQueue
from faststream.rabbit.schemas.queue import QueueType, QuorumQueueArgs
from faststream.specification import AsyncAPI
from faststream.specification.base import SpecificationFactory

from app.messaging.topology import TIERS, Topology
from contracts import PaymentMessage

CONSUMER_DESCRIPTION = (
    "Processes each payment exactly once: a pool of queue workers per tier takes deliveries in batches, "
    "commits each batch's idempotency records and ledger rows together (one transaction per tenant), and "
    "acks the batch after the commit; failures go to delay queues or the dead-letter exchange."
)

PAYMENTS_DESCRIPTION = (
    "Payment instructions, one message per payment (wire contract v1). Routing key `<tenant_id>.payment`; "
    "AMQP properties mirror the envelope: message_id, correlation_id, timestamp, content_type "
    "application/json, persistent delivery, expiration = remaining TTL in ms, header `tenantUUID` = the "
    "tenant, and `user_id` = the publisher's RabbitMQ login (validated by the broker)."
)
DEAD_LETTER_DESCRIPTION = (
    "Dead letters: the original body and headers, untouched, plus `remit-reason` (invalid, tenant_mismatch, "
    "unknown_tenant, permanent_failure, retries_exhausted, expired), `remit-error-type`, `remit-error`, "
    "`remit-attempts`, `remit-failed-at` and `remit-original-queue`; or, when the broker dead-lettered it "
    "(expiry, delivery limit), its `x-death` headers. Archived into the dead-letter store."
)


class SpecificationOf(AsyncAPI):
    """The document of the first broker given: the app's runtime broker, added later, has nothing to show."""

    def add_broker(self, broker: BrokerUsecase[Any, Any, Any], /) -> SpecificationFactory:
        if not self.brokers:
            super().add_broker(broker)
        return self


def specification_broker(amqp_url: str, topology: Topology) -> RabbitBroker:
    broker = RabbitBroker(
        amqp_url,
        description="RabbitMQ 3.10+ / 4.x; quorum queues; every tenant publishes as its own RabbitMQ user.",
    )
    _document_consumers(broker, topology)
    _document_publishers(broker, topology)
    return broker


def _document_consumers(broker: RabbitBroker, topology: Topology) -> None:
    async def consume_payment(payment: PaymentMessage) -> None:
        """Served by the queue workers; this declaration carries the channel and its schema."""

    for tier in TIERS:
        queue = RabbitQueue(
            topology.tier_queue(tier),
            queue_type=QueueType.QUORUM,
            durable=True,
            arguments=cast("QuorumQueueArgs", topology.work_queue_arguments()),
        )
        broker.subscriber(queue, title=queue.name, description=CONSUMER_DESCRIPTION)(consume_payment)


def _document_publishers(broker: RabbitBroker, topology: Topology) -> None:
    broker.publisher(
        exchange=RabbitExchange(topology.exchange, type=ExchangeType.TOPIC, durable=True),
        routing_key="{tenant_id}.payment",
        schema=PaymentMessage,
        title="payments",
        description=PAYMENTS_DESCRIPTION,
        persist=True,
    )
    for level, delay in enumerate(topology.retry_delays_seconds):
        broker.publisher(
            exchange=RabbitExchange(topology.retry_queue(level), type=ExchangeType.FANOUT, durable=True),
            routing_key="{tenant_id}.payment",
            schema=PaymentMessage,
            title=topology.retry_queue(level),
            description=f"Retry after {delay:g}s: the payment with retry_count + 1 and the same message_id, "
            f"through the fanout exchange and queue {topology.retry_queue(level)}; when the delay runs out the "
            f"broker dead-letters it back to `{topology.exchange}` with its own routing key, so it reaches the "
            "tenant's current work queue.",
            persist=True,
        )
    broker.publisher(
        exchange=RabbitExchange(topology.dead_letter_exchange, type=ExchangeType.FANOUT, durable=True),
        schema=bytes,
        title=topology.dead_letter_exchange,
        description=DEAD_LETTER_DESCRIPTION,
        persist=True,
    )

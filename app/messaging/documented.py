"""Publishers that exist for the AsyncAPI document: what remit (and direct publishers) send, and where.

The relay and the republisher publish with aio-pika directly (confirms, batching); these objects make
the same channels, with their message schemas, part of the generated specification.
"""

from faststream.rabbit import ExchangeType, RabbitBroker, RabbitExchange

from app.messaging.topology import Topology
from contracts import PaymentMessage

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


def document_publishers(broker: RabbitBroker, topology: Topology) -> None:
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

"""The AsyncAPI document of remit: what remit (and direct publishers) send, what it consumes, and where.

FastStream generates what it can from declarations on a broker that is never started: the publishers
describe where the relay, the republisher and replays send (they publish with aio-pika directly, for
confirms and batching), and the dead-letter queue is documented by the archiver's own subscriber, the
handler the archiver process runs. The rest (the work queues, which remit's own queue workers consume,
the headers, queue arguments, security) is added by app/messaging/asyncapi_extras.py. The consumer
serves this document at /docs/asyncapi, and `python -m app.specification` writes it to docs/asyncapi.json.
"""

import copy
import json
from dataclasses import dataclass
from typing import Any

from faststream._internal.broker import BrokerUsecase
from faststream.rabbit import ExchangeType, RabbitBroker, RabbitExchange
from faststream.specification import AsyncAPI
from faststream.specification.base import Specification, SpecificationFactory

from app.deadletters.archiver import register_archiver
from app.messaging.asyncapi_extras import complete
from app.messaging.topology import Topology
from contracts import PaymentMessage

# The document describes the docker-compose deployment, wherever it is generated or served: its names,
# schemas and rules are the contract; the broker's address is each deployment's REMIT_AMQP_URL.
DOC_AMQP_URL = "amqp://rabbitmq:5672/"

PAYMENTS_DESCRIPTION = (
    "Payment instructions, one message per payment (wire contract v1). Routing key `<tenant_id>.payment`; "
    "AMQP properties mirror the envelope: message_id, correlation_id, timestamp, content_type "
    "application/json, persistent delivery, expiration = remaining TTL in ms, header `tenantUUID` = the "
    "tenant, and `user_id` = the publisher's RabbitMQ login (validated by the broker). Sent by the relay "
    "(from the outbox), by a tenant's own login, and by `remit dlq replay` (the dead letter's payment again, "
    "with `remit-replay-of`). The consumer applies the business rules ingress applies (amount limit, debtor "
    "!= creditor, timestamp at most 300 s ahead, TTL bound, required checks, the tenant's message size) and "
    "holds a tenant's own publishes to its publish rate and in-flight limit; the broker refuses bodies over "
    "16 MiB."
)
DEAD_LETTER_DESCRIPTION = (
    "Dead letters, published by the consumer as the service's own login: the original body and headers (a "
    "direct publisher's own `remit-*` headers moved under `remit-claims`) with the verdict headers; a body "
    "over the consumer's cap travels as its first bytes with `remit-body-truncated`, `remit-body-length` and "
    "`remit-body-sha256`. The broker dead-letters here too (expiry, delivery limit), with its `x-death` "
    "headers and the publisher's user_id. Every header is described on the message."
)


@dataclass(frozen=True, slots=True)
class Document:
    """A finished AsyncAPI document, as FastStream's Specification protocol hands documents around."""

    content: dict[str, Any]

    @property
    def title(self) -> str:
        return str(self.content["info"]["title"])

    def to_jsonable(self) -> Any:
        return copy.deepcopy(self.content)

    def to_json(self) -> str:
        return json.dumps(self.content, sort_keys=True)

    def to_yaml(self) -> str:
        import yaml  # late: only `faststream docs gen --yaml` asks, with the dev extra installed

        return str(yaml.safe_dump(self.content, sort_keys=True))


class RemitSpecification(AsyncAPI):
    """The consumer app's document: generated from the documentation broker, then completed. The app's
    runtime broker, which FastStream adds too, has nothing to show."""

    def __init__(self, topology: Topology, **info: Any) -> None:
        super().__init__(specification_broker(topology), **info)
        self._topology = topology

    def add_broker(self, broker: BrokerUsecase[Any, Any, Any], /) -> SpecificationFactory:
        if not self.brokers:
            super().add_broker(broker)
        return self

    def to_specification(self) -> Specification:
        content: dict[str, Any] = super().to_specification().to_jsonable()
        complete(content, self._topology)
        return Document(content)


def specification_broker(topology: Topology) -> RabbitBroker:
    broker = RabbitBroker(
        DOC_AMQP_URL,
        description="RabbitMQ 3.10+ / 4.x; quorum queues; every tenant publishes as its own RabbitMQ user.",
    )
    _document_publishers(broker, topology)
    register_archiver(broker, topology)
    return broker


def _document_publishers(broker: RabbitBroker, topology: Topology) -> None:
    broker.publisher(
        exchange=RabbitExchange(topology.exchange, type=ExchangeType.TOPIC, durable=True),
        routing_key="{tenant_id}.payment",
        schema=PaymentMessage,
        title=topology.exchange,
        description=PAYMENTS_DESCRIPTION,
        persist=True,
    )
    for level, delay in enumerate(topology.retry_delays_seconds):
        broker.publisher(
            exchange=RabbitExchange(topology.retry_queue(level), type=ExchangeType.FANOUT, durable=True),
            routing_key="{tenant_id}.payment",
            schema=PaymentMessage,
            title=topology.retry_queue(level),
            description=f"Retry after {delay:g}s, sent by the consumer (app/consumer/republisher.py) as the "
            "service's own login: the payment with retry_count + 1 and the same message_id, through this fanout "
            f"exchange into the delay queue of the same name.",
            persist=True,
        )
    broker.publisher(
        exchange=RabbitExchange(topology.dead_letter_exchange, type=ExchangeType.FANOUT, durable=True),
        schema=bytes,
        title=topology.dead_letter_exchange,
        description=DEAD_LETTER_DESCRIPTION,
        persist=True,
    )

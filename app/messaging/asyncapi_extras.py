"""What the AsyncAPI document says that FastStream cannot generate from declarations (docs/asyncapi.md).

- the work queues: remit's own queue workers consume them (app/consumer/worker.py), not a FastStream
  handler, so they are described here instead of through a subscriber that would do nothing;
- the dedicated queues, and the delay queues nobody consumes (the broker moves their messages on);
- every header with who may set it and whether it is believed (app/messaging/header_docs.py);
- the `{tenant_id}` address parameter, queue arguments, the security scheme, and how control travels.
"""

from typing import Any

from app.messaging import header_docs as hd
from app.messaging.headers import TENANT
from app.messaging.topology import TENANT_KEY_PATTERN, TIERS, Topology

WORK_QUEUE_HANDLER = (
    "app/consumer/worker.py (QueueWorkers) -> app/consumer/processor.py (PaymentProcessor.process_batch)"
)
WORK_QUEUE_DESCRIPTION = (
    "Consumed by remit's queue workers ({handler}), not by a FastStream subscriber: each consumer process "
    "runs a pool of workers per queue, sized per tier, that takes deliveries in batches, commits each "
    "batch's idempotency records and ledger rows together (one transaction per tenant) and acks the batch "
    "after the commit; failures go to the delay queues or the dead-letter exchange. A payment is identified "
    "by (tenant_id, message_id): the idempotency record (PostgreSQL `processed_messages`) is keyed by both, "
    "so the same message_id from the same tenant is a duplicate (acked, not paid again) and from two "
    "tenants is two payments. {binding}"
)
CONTROL = (
    "There are no control messages on the broker: it carries payments (fresh from the relay or a tenant's "
    "own login, retried by the consumer, replayed by an operator) and dead letters. Worker pools are started "
    "and stopped through PostgreSQL (`remit workers start|stop|restart` writes the desired state; every "
    "consumer process applies it within 2 s), and tenants are routed, suspended and limited through "
    "PostgreSQL and the RabbitMQ management API."
)
TENANT_PARAMETER = {"description": f"The tenant id ({TENANT_KEY_PATTERN}); publishers may write only their own."}
DEAD_LETTER_QUEUE_HANDLER = (
    "The handler is the archiver's FastStream subscriber (app/deadletters/archiver.py, archive_dead_letter), "
    "run by `remit archiver`; it believes `remit-*` headers from the service's login only."
)
DEAD_LETTER_QUEUE_NOTE = "no delivery limit on the dead-letter queue, so the broker can never drop a dead letter"


def complete(doc: dict[str, Any], topology: Topology) -> None:
    vhost = doc["channels"][topology.exchange]["bindings"]["amqp"]["exchange"]["vhost"]
    servers = [{"$ref": f"#/servers/{name}"} for name in doc["servers"]]
    _message_headers(doc, topology)
    for tier in TIERS:
        binding = f"Bound to each {tier}-tier tenant's `<tenant_id>.payment` key, one by one."
        _work_queue(doc, topology, topology.tier_queue(tier), vhost, servers, binding)
    dedicated = topology.dedicated_queue("{tenant_id}")
    binding = "One per tenant given a queue of its own (`remit tenants dedicate`), bound to its key alone."
    _work_queue(doc, topology, dedicated, vhost, servers, binding)
    doc["channels"][dedicated]["parameters"] = {"tenant_id": TENANT_PARAMETER}
    for level in range(len(topology.retry_delays_seconds)):
        _delay_queue(doc, topology, level, vhost, servers)
    _dead_letter_queue(doc["channels"][topology.dead_letter_queue])
    doc["channels"][topology.exchange]["parameters"] = {"tenant_id": TENANT_PARAMETER}
    doc["info"]["description"] = f"{doc['info']['description']}\n\n{CONTROL}"
    _security(doc)


def _dead_letter_queue(channel: dict[str, Any]) -> None:
    channel["description"] = f"{channel['description']} {DEAD_LETTER_QUEUE_HANDLER}"
    channel["x-remit-queue-arguments"] = {"x-queue-type": "quorum"}
    channel["x-remit-note"] = DEAD_LETTER_QUEUE_NOTE


def _message_headers(doc: dict[str, Any], topology: Topology) -> None:
    messages = doc["components"]["messages"]
    messages[f"{topology.exchange}:Message"]["headers"] = hd.headers_schema(hd.PAYMENT_HEADERS, (TENANT,))
    for level in range(len(topology.retry_delays_seconds)):
        messages[f"{topology.retry_queue(level)}:Message"]["headers"] = hd.headers_schema(hd.RETRY_HEADERS, (TENANT,))
    dead_letter = hd.headers_schema(hd.DEAD_LETTER_HEADERS, ())
    messages[f"{topology.dead_letter_exchange}:Message"]["headers"] = dead_letter
    messages[f"{topology.dead_letter_queue}:SubscribeMessage"]["headers"] = dead_letter


def _work_queue(
    doc: dict[str, Any], topology: Topology, name: str, vhost: str, servers: list[dict[str, str]], binding: str
) -> None:
    message = f"{name}:SubscribeMessage"
    doc["components"]["messages"][message] = {
        "title": message,
        "correlationId": {"location": "$message.header#/correlation_id"},
        "payload": {"$ref": "#/components/schemas/PaymentMessage"},
        "headers": hd.headers_schema(hd.DELIVERED_HEADERS, (TENANT,)),
    }
    doc["channels"][name] = {
        **_queue_channel(name, vhost, servers, {"SubscribeMessage": {"$ref": f"#/components/messages/{message}"}}),
        "description": WORK_QUEUE_DESCRIPTION.format(handler=WORK_QUEUE_HANDLER, binding=binding),
        "x-remit-queue-arguments": topology.work_queue_arguments(),
        "x-remit-dead-letter-queue": {
            "exchange": topology.dead_letter_exchange,
            "queue": topology.dead_letter_queue,
            "arguments": {"x-queue-type": "quorum"},
            "note": DEAD_LETTER_QUEUE_NOTE,
        },
    }
    doc["operations"][name] = {
        "action": "receive",
        "channel": {"$ref": f"#/channels/{name}"},
        "messages": [{"$ref": f"#/channels/{name}/messages/SubscribeMessage"}],
        "bindings": {"amqp": {"ack": True, "bindingVersion": "0.3.0"}},
        "description": f"The queue workers: {WORK_QUEUE_HANDLER}.",
    }


def _delay_queue(
    doc: dict[str, Any], topology: Topology, level: int, vhost: str, servers: list[dict[str, str]]
) -> None:
    name = topology.retry_queue(level)
    message = {"Message": {"$ref": f"#/components/messages/{name}:Message"}}
    doc["channels"][f"{name}.queue"] = {
        **_queue_channel(name, vhost, servers, message),
        "description": f"The delay queue behind the exchange `{name}`. Nobody consumes it: each message waits "
        f"{topology.retry_delays_seconds[level]:g}s (x-message-ttl), then the broker dead-letters it to "
        f"`{topology.exchange}` with its own routing key, back into its tenant's current work queue.",
        "x-remit-queue-arguments": topology.retry_queue_arguments(level),
    }


def _queue_channel(name: str, vhost: str, servers: list[dict[str, str]], messages: dict[str, Any]) -> dict[str, Any]:
    queue = {"name": name, "durable": True, "exclusive": False, "autoDelete": False, "vhost": vhost}
    return {
        "address": name,
        "bindings": {"amqp": {"bindingVersion": "0.3.0", "is": "queue", "queue": queue}},
        "messages": messages,
        "servers": servers,
    }


def _security(doc: dict[str, Any]) -> None:
    doc["components"]["securitySchemes"] = {
        "tenantLogin": {
            "type": "userPassword",
            "description": "Each tenant publishes as its own RabbitMQ user, whose topic permission allows "
            "only routing keys `<tenant_id>.*` on `payments`; messages must carry `user_id` = that login, "
            "which RabbitMQ validates. Messages without it are refused by the consumer.",
        }
    }
    for server in doc["servers"].values():
        server["security"] = [{"$ref": "#/components/securitySchemes/tenantLogin"}]

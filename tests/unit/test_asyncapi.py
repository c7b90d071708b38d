"""The committed AsyncAPI document is what the code generates, and documents the public contract."""

import json
from typing import Any

import pytest

from app.bootstrap import archiver_broker
from app.consumer.processor import PaymentProcessor
from app.consumer.worker import QueueWorkers
from app.messaging import headers
from app.messaging.documented import specification_broker
from app.messaging.topology import Topology
from app.settings import Settings
from app.specification import DOC_PATH, render


def handler_code(subscriber: Any) -> object:
    """The code a FastStream subscriber runs (the function under FastStream's call wrapper)."""
    return subscriber.calls[0].handler._original_call.__code__


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    generated = render()
    assert DOC_PATH.read_text() == generated, "docs/asyncapi.json is stale: run `python -m app.specification`"
    parsed: dict[str, Any] = json.loads(generated)
    return parsed


def test_payments_exchange_is_documented_with_the_tenant_routing_key(doc: dict[str, Any]) -> None:
    channel = doc["channels"]["payments"]
    assert channel["address"] == "{tenant_id}.payment"
    assert channel["bindings"]["amqp"]["exchange"] == {
        "name": "payments",
        "type": "topic",
        "durable": True,
        "autoDelete": False,
        "vhost": "/",
    }
    assert "tenant_id" in channel["parameters"]


def test_messages_carry_the_tenant_header_and_the_payment_schema(doc: dict[str, Any]) -> None:
    messages = doc["components"]["messages"]
    assert messages["payments:Message"]["headers"]["required"] == ["tenantUUID"]
    consumed = messages["payments.work.basic:SubscribeMessage"]
    assert consumed["payload"] == {"$ref": "#/components/schemas/PaymentMessage"}
    assert consumed["headers"]["properties"]["tenantUUID"]["pattern"].startswith("^[a-z0-9]")


def test_payment_schema_has_descriptions_and_constraints(doc: dict[str, Any]) -> None:
    schema = doc["components"]["schemas"]["PaymentMessage"]
    amount = schema["properties"]["amount_cents"]
    assert amount["type"] == "integer"
    assert amount["exclusiveMinimum"] == 0
    assert all("description" in p for p in schema["properties"].values())
    assert schema["additionalProperties"] is False


def test_queue_arguments_and_dead_lettering_are_documented(doc: dict[str, Any]) -> None:
    work = doc["channels"]["payments.work.premium"]
    assert work["x-remit-queue-arguments"]["x-dead-letter-strategy"] == "at-least-once"
    assert work["x-remit-queue-arguments"]["x-overflow"] == "reject-publish"
    assert work["x-remit-dead-letter-queue"]["queue"] == "payments.dlq"
    assert {f"payments.work.{t}" for t in ("free", "basic", "premium", "enterprise")} <= set(doc["channels"])
    assert doc["channels"]["payments.dlx"]["bindings"]["amqp"]["exchange"]["type"] == "fanout"
    dlq = doc["channels"]["payments.dlq"]
    assert dlq["bindings"]["amqp"]["queue"]["name"] == "payments.dlq"
    assert dlq["x-remit-queue-arguments"] == {"x-queue-type": "quorum"}  # no delivery limit: never dropped
    assert doc["operations"]["payments.dlq"]["action"] == "receive"


@pytest.mark.parametrize(("delay_ms", "level"), [(1000, 0), (5000, 1), (30000, 2)])
def test_each_retry_exchange_and_its_delay_queue_are_documented(doc: dict[str, Any], delay_ms: int, level: int) -> None:
    name = f"payments.retry.{delay_ms}ms"
    assert doc["channels"][name]["bindings"]["amqp"]["exchange"]["type"] == "fanout"
    assert doc["operations"][name]["action"] == "send"
    queue = doc["channels"][f"{name}.queue"]
    assert queue["bindings"]["amqp"]["queue"]["name"] == name
    arguments = queue["x-remit-queue-arguments"]
    assert arguments["x-message-ttl"] == delay_ms
    assert arguments["x-dead-letter-exchange"] == "payments"  # back through the tenant's own routing key
    assert "x-dead-letter-routing-key" not in arguments
    assert "Nobody consumes it" in queue["description"]
    channels_received = {op["channel"]["$ref"] for op in doc["operations"].values() if op["action"] == "receive"}
    assert f"#/channels/{name}.queue" not in channels_received  # the broker moves them, no handler does


def test_every_documented_subscriber_is_a_handler_a_service_runs(doc: dict[str, Any]) -> None:
    """A FastStream subscriber in the document must be the very handler a remit process consumes with: no
    stub whose only job is to make a channel appear."""
    documented = {handler_code(s) for s in specification_broker(Topology.from_settings(Settings())).subscribers}
    running = {handler_code(s) for s in archiver_broker(Settings()).subscribers}
    assert documented
    assert documented <= running


def test_work_queues_are_received_by_the_queue_workers(doc: dict[str, Any]) -> None:
    received = [name for name, op in doc["operations"].items() if op["action"] == "receive"]
    assert sorted(received) == [
        "payments.dlq",
        "payments.work.basic",
        "payments.work.enterprise",
        "payments.work.free",
        "payments.work.premium",
        "payments.work.tenant.{tenant_id}",
    ]
    for name in received:
        if name.startswith("payments.work."):
            assert "QueueWorkers" in doc["operations"][name]["description"]
    assert callable(QueueWorkers)  # what the descriptions name
    assert callable(PaymentProcessor.process_batch)
    dedicated = doc["channels"]["payments.work.tenant.{tenant_id}"]
    assert dedicated["address"] == "payments.work.tenant.{tenant_id}"
    assert "tenant_id" in dedicated["parameters"]


def test_every_remit_header_is_documented_with_who_may_set_it(doc: dict[str, Any]) -> None:
    names = {v for k, v in vars(headers).items() if k.isupper() and isinstance(v, str) and v != headers.PREFIX}
    assert {"tenantUUID", "remit-reason", "remit-replay-of", "remit-claims"} <= names
    documented: dict[str, str] = {}
    for message in doc["components"]["messages"].values():
        for name, schema in message.get("headers", {}).get("properties", {}).items():
            documented[name] = schema["description"]
    assert set(documented) == names
    for name, description in documented.items():
        assert "Set by: " in description, name
        if name.startswith("remit-"):
            assert "Believed only on a message the service's own RabbitMQ login" in description, name


def test_headers_each_message_carries(doc: dict[str, Any]) -> None:
    messages = doc["components"]["messages"]
    payment = messages["payments:Message"]["headers"]
    assert payment["required"] == ["tenantUUID"]
    assert set(payment["properties"]) == {"tenantUUID", "remit-published-at", "remit-replay-of"}
    retry = messages["payments.retry.5000ms:Message"]["headers"]["properties"]
    assert {"remit-published-by", "remit-tenant", "remit-original-queue"} <= set(retry)
    dead = messages["payments.dlx:Message"]["headers"]
    assert dead["required"] == []  # the broker's own dead letters carry x-death instead
    assert {"remit-reason", "remit-claims", "remit-body-sha256"} <= set(dead["properties"])
    assert messages["payments.dlq:SubscribeMessage"]["headers"] == dead


def test_the_document_says_there_are_no_control_messages_on_the_broker(doc: dict[str, Any]) -> None:
    assert "There are no control messages on the broker" in doc["info"]["description"]


def test_security_scheme_names_the_per_tenant_login(doc: dict[str, Any]) -> None:
    assert doc["components"]["securitySchemes"]["tenantLogin"]["type"] == "userPassword"
    assert doc["servers"]["development"]["security"] == [{"$ref": "#/components/securitySchemes/tenantLogin"}]


def test_the_idempotency_key_is_documented_as_tenant_and_message_id(doc: dict[str, Any]) -> None:
    for tier in ("free", "basic", "premium", "enterprise"):
        assert "identified by (tenant_id, message_id)" in doc["channels"][f"payments.work.{tier}"]["description"]
    message_id = doc["components"]["schemas"]["PaymentMessage"]["properties"]["message_id"]
    assert "the same id from two tenants is two payments" in message_id["description"]

"""The committed AsyncAPI document is what the code generates, and documents the public contract."""

import json
from typing import Any

import pytest

from app.specification import DOC_PATH, render


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
    retry = doc["channels"]["payments.retry.1000ms"]["x-remit-queue-arguments"]
    assert retry["x-message-ttl"] == 1000
    assert retry["x-dead-letter-exchange"] == "payments"  # back through the tenant's own routing key
    assert "x-dead-letter-routing-key" not in retry
    assert {f"payments.work.{t}" for t in ("free", "basic", "premium", "enterprise")} <= set(doc["channels"])
    assert "payments.dlx" in doc["channels"]


def test_security_scheme_names_the_per_tenant_login(doc: dict[str, Any]) -> None:
    assert doc["components"]["securitySchemes"]["tenantLogin"]["type"] == "userPassword"
    assert doc["servers"]["development"]["security"] == [{"$ref": "#/components/securitySchemes/tenantLogin"}]

"""Builders of valid payment messages with fresh ids, for unit and integration tests.

`make_message` returns a validated `PaymentMessage`; `make_wire_dict` returns the JSON-ready dict a publisher
would put on the wire. Overrides replace (or add) top-level keys as given and are not validated by the
wire-dict builder, so tests can feed invalid values through `PaymentMessage.from_wire`.
"""

import json
import secrets
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import uuid6

from app.payment_rules import PaymentRules
from app.publisher.validation import BatchContext
from app.settings import Settings
from contracts import PaymentMessage

# The checks ingress runs and writes in validation_result.checks (REMIT_REQUIRED_CHECKS requires none by default).
CHECKS = ("format_valid", "currency_active", "limit_ok", "debtor_differs_from_creditor", "reference_unique")


def new_message_id() -> UUID:
    """A fresh UUIDv7 as a plain `uuid.UUID`."""
    return UUID(int=uuid6.uuid7().int)


def new_tenant_id() -> str:
    """A fresh tenant id, safe in routing keys: 't' and 8 hex digits."""
    return f"t{secrets.token_hex(4)}"


def new_correlation_id() -> str:
    """A fresh bulk batch id."""
    return f"bulk_test_{secrets.token_hex(6)}"


def new_payment_reference() -> str:
    """A fresh payment reference (at most 35 characters)."""
    return f"PAY-TEST-{secrets.token_hex(8).upper()}"


def _defaults() -> dict[str, Any]:
    return {
        "message_id": new_message_id(),
        "timestamp_utc": datetime.now(UTC),
        "correlation_id": new_correlation_id(),
        "tenant_id": new_tenant_id(),
        "payment_reference": new_payment_reference(),
        "amount_cents": 150_000,
        "currency": "AUD",
        "debtor_bsb": "012-345",
        "debtor_account": "123456789",
        "creditor_bsb": "033-001",
        "creditor_account": "987654321",
        "validation_result": {"passed": True, "checks": list(CHECKS)},
        "retry_count": 0,
        "ttl_seconds": 86_400,
    }


def make_message(**overrides: Any) -> PaymentMessage:
    """A valid message with fresh ids; overrides are Python values and are validated like any input."""
    return PaymentMessage.model_validate({**_defaults(), **overrides})


def make_wire_dict(**overrides: Any) -> dict[str, Any]:
    """A valid message as its JSON-ready dict (fresh ids), with the overrides applied unvalidated."""
    wire: dict[str, Any] = json.loads(make_message().to_wire())
    wire.update(overrides)
    return wire


def to_wire_bytes(wire: dict[str, Any]) -> bytes:
    """Encode a wire dict as a message body."""
    return json.dumps(wire).encode()


def padded_body(wire: dict[str, Any], size: int) -> bytes:
    """The wire dict's body padded with JSON whitespace to exactly `size` bytes: still the same payment."""
    body = to_wire_bytes(wire)
    assert len(body) <= size, f"the body is already {len(body)} bytes"
    return body + b" " * (size - len(body))


def batch_context(
    tenant_id: str = "acme", correlation_id: str = "bulk_acme_20250501_batch_0001", **rules: Any
) -> BatchContext:
    """An ingress context with the default business rules (Settings(), or `rules` as Settings fields), the
    default TTL and message size."""
    return BatchContext(
        tenant_id=tenant_id,
        correlation_id=correlation_id,
        now=datetime.now(UTC),
        ttl_seconds=86_400,
        rules=PaymentRules.from_settings(Settings(**rules)),
        max_message_bytes=65_536,
        known_references=frozenset(),
    )

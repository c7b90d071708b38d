"""Every class of invalid message is refused, with an error located at the offending field."""

from datetime import datetime, timedelta, timezone
from typing import Any
from uuid import UUID

import pytest
from pydantic import ValidationError

from contracts import PaymentMessage
from tests.utils.factories import make_message, make_wire_dict, to_wire_bytes

REQUIRED_FIELDS = [
    "message_id",
    "timestamp_utc",
    "correlation_id",
    "tenant_id",
    "payment_reference",
    "amount_cents",
    "currency",
    "debtor_bsb",
    "debtor_account",
    "creditor_bsb",
    "creditor_account",
    "validation_result",
    "retry_count",
    "ttl_seconds",
]

PATTERN = "should match pattern"
NOT_ACTIVE_CURRENCY = "is not an active ISO 4217 currency code"


def _errors_for(wire: dict[str, Any]) -> tuple[ValidationError, list[Any]]:
    with pytest.raises(ValidationError) as excinfo:
        PaymentMessage.from_wire(to_wire_bytes(wire))
    return excinfo.value, list(excinfo.value.errors())


# (field, wire value, expected fragment of the error message)
INVALID_VALUES = [
    pytest.param("amount_cents", 150000.0, "valid integer", id="amount-float"),
    pytest.param("amount_cents", 1500.5, "valid integer", id="amount-fractional-float"),
    pytest.param("amount_cents", "150000", "valid integer", id="amount-numeric-string"),
    pytest.param("amount_cents", True, "not a boolean", id="amount-bool"),
    pytest.param("amount_cents", None, "valid integer", id="amount-null"),
    pytest.param("amount_cents", 0, "greater than 0", id="amount-zero"),
    pytest.param("amount_cents", -150000, "greater than 0", id="amount-negative"),
    pytest.param(
        "amount_cents", 100_000_000_000_001, "less than or equal to 100000000000000", id="amount-just-too-large"
    ),
    pytest.param("currency", "aud", PATTERN, id="currency-lower-case"),
    pytest.param("currency", "ABC", NOT_ACTIVE_CURRENCY, id="currency-unknown"),
    pytest.param("currency", "DEM", NOT_ACTIVE_CURRENCY, id="currency-withdrawn-dem"),
    pytest.param("currency", "HRK", NOT_ACTIVE_CURRENCY, id="currency-withdrawn-hrk"),
    pytest.param("currency", "AUD ", PATTERN, id="currency-trailing-space"),
    pytest.param("currency", " AUD", PATTERN, id="currency-leading-space"),
    pytest.param("currency", "XAU", NOT_ACTIVE_CURRENCY, id="currency-gold"),
    pytest.param("currency", "XTS", NOT_ACTIVE_CURRENCY, id="currency-testing-code"),
    pytest.param("currency", "XXX", NOT_ACTIVE_CURRENCY, id="currency-no-currency"),
    pytest.param("currency", "XDR", NOT_ACTIVE_CURRENCY, id="currency-sdr"),
    pytest.param("currency", "036", PATTERN, id="currency-numeric-code"),
    pytest.param("timestamp_utc", "2025-05-01T02:14:33.421", "timezone", id="timestamp-naive"),
    pytest.param("timestamp_utc", "2025-05-01T12:14:33.421+10:00", "must be in UTC", id="timestamp-plus-10"),
    pytest.param("timestamp_utc", "2025-04-30T21:14:33-05:00", "must be in UTC", id="timestamp-minus-5"),
    pytest.param("timestamp_utc", "not a date", "ISO 8601", id="timestamp-not-a-date"),
    pytest.param("timestamp_utc", "2025-05-01", "ISO 8601", id="timestamp-date-only"),
    pytest.param("timestamp_utc", "1714529673", "ISO 8601", id="timestamp-unix-seconds-string"),
    pytest.param("timestamp_utc", "2025-05-01 02:14:33Z", "ISO 8601", id="timestamp-space-separator"),
    pytest.param("timestamp_utc", "2025-05-01T02:14Z", "ISO 8601", id="timestamp-no-seconds"),
    pytest.param("timestamp_utc", "2025-13-01T02:14:33Z", "not a valid date-time", id="timestamp-month-13"),
    pytest.param("timestamp_utc", 1714529673, "valid datetime", id="timestamp-number"),
    pytest.param("debtor_bsb", "012345", PATTERN, id="bsb-no-dash"),
    pytest.param("debtor_bsb", "12-345", PATTERN, id="bsb-too-short"),
    pytest.param("creditor_bsb", "012-3456", PATTERN, id="bsb-too-long"),
    pytest.param("creditor_bsb", 12345, "valid string", id="bsb-number"),
    pytest.param("debtor_account", "12345A789", PATTERN, id="account-letters"),
    pytest.param("debtor_account", "12345", PATTERN, id="account-too-short"),
    pytest.param("creditor_account", "12345678901", PATTERN, id="account-too-long"),
    pytest.param("creditor_account", "123 456 789", PATTERN, id="account-spaces"),
    pytest.param("payment_reference", "P" * 36, PATTERN, id="reference-36-chars"),
    pytest.param("payment_reference", "PAY 001", PATTERN, id="reference-space"),
    pytest.param("payment_reference", "PAY#001", PATTERN, id="reference-hash"),
    pytest.param("payment_reference", "PAY-001\n", PATTERN, id="reference-trailing-newline"),
    pytest.param("payment_reference", "", PATTERN, id="reference-empty"),
    pytest.param("correlation_id", "b" * 65, PATTERN, id="correlation-65-chars"),
    pytest.param("correlation_id", "batch 42", PATTERN, id="correlation-space"),
    pytest.param("tenant_id", "anz.prod", PATTERN, id="tenant-dot"),
    pytest.param("tenant_id", "ANZ", PATTERN, id="tenant-upper-case"),
    pytest.param("tenant_id", "anz*", PATTERN, id="tenant-routing-wildcard-star"),
    pytest.param("tenant_id", "anz#", PATTERN, id="tenant-routing-wildcard-hash"),
    pytest.param("tenant_id", "a", PATTERN, id="tenant-too-short"),
    pytest.param("tenant_id", "t" * 33, PATTERN, id="tenant-too-long"),
    pytest.param("tenant_id", "anz\n", PATTERN, id="tenant-trailing-newline"),
    pytest.param("retry_count", -1, "greater than or equal to 0", id="retry-negative"),
    pytest.param("retry_count", 101, "less than or equal to 100", id="retry-too-large"),
    pytest.param("retry_count", 1.0, "valid integer", id="retry-float"),
    pytest.param("ttl_seconds", 0, "greater than or equal to 1", id="ttl-zero"),
    pytest.param("ttl_seconds", -86400, "greater than or equal to 1", id="ttl-negative"),
    pytest.param("ttl_seconds", 2_592_001, "less than or equal to 2592000", id="ttl-just-too-large"),
    pytest.param("ttl_seconds", "86400", "valid integer", id="ttl-string"),
    pytest.param("message_id", "not-a-uuid", "canonical", id="message-id-not-uuid"),
    pytest.param("message_id", "pmsg_7f3a91bc-4e2d-4c8a-b1f0-9d3e2a1c5b7d", "canonical", id="message-id-prefixed"),
    pytest.param("message_id", "7f3a91bc4e2d4c8ab1f09d3e2a1c5b7d", "canonical", id="message-id-no-dashes"),
    pytest.param("message_id", "urn:uuid:7f3a91bc-4e2d-4c8a-b1f0-9d3e2a1c5b7d", "canonical", id="message-id-urn-form"),
    pytest.param("message_id", 42, "UUID", id="message-id-number"),
]


@pytest.mark.parametrize(("field", "value", "fragment"), INVALID_VALUES)
def test_invalid_value_is_refused_at_its_field(field: str, value: object, fragment: str) -> None:
    exc, errors = _errors_for(make_wire_dict(**{field: value}))

    assert [error["loc"] for error in errors] == [(field,)]
    assert fragment in errors[0]["msg"]
    assert field in str(exc)


# (wire validation_result, expected loc, expected fragment)
INVALID_VALIDATION_RESULTS = [
    pytest.param(
        {"passed": "true", "checks": []}, ("validation_result", "passed"), "valid boolean", id="passed-string"
    ),
    pytest.param({"passed": 1, "checks": []}, ("validation_result", "passed"), "valid boolean", id="passed-int"),
    pytest.param({"checks": []}, ("validation_result", "passed"), "required", id="passed-missing"),
    pytest.param({"passed": True}, ("validation_result", "checks"), "required", id="checks-missing"),
    pytest.param(
        {"passed": True, "checks": "bsb_valid"},
        ("validation_result", "checks"),
        "valid array",
        id="checks-string",
    ),
    pytest.param(
        {"passed": True, "checks": ["Bsb Valid"]},
        ("validation_result", "checks", 0),
        PATTERN,
        id="check-name",
    ),
    pytest.param(
        {"passed": True, "checks": ["c"] * 33},
        ("validation_result", "checks"),
        "at most 32",
        id="checks-too-many",
    ),
    pytest.param(
        {"passed": True, "checks": [], "by": "x"},
        ("validation_result", "by"),
        "Extra inputs",
        id="extra-field",
    ),
    pytest.param(True, ("validation_result",), "an object", id="not-an-object"),
]


@pytest.mark.parametrize(("value", "loc", "fragment"), INVALID_VALIDATION_RESULTS)
def test_invalid_validation_result_is_refused_at_its_field(
    value: object, loc: tuple[str | int, ...], fragment: str
) -> None:
    _, errors = _errors_for(make_wire_dict(validation_result=value))

    assert [error["loc"] for error in errors] == [loc]
    assert fragment in errors[0]["msg"]


@pytest.mark.parametrize("field", REQUIRED_FIELDS)
def test_missing_field_is_refused(field: str) -> None:
    wire = make_wire_dict()
    del wire[field]

    exc, errors = _errors_for(wire)

    assert [(error["loc"], error["type"]) for error in errors] == [((field,), "missing")]
    assert field in str(exc)


def test_required_fields_are_exactly_the_model_fields() -> None:
    assert list(PaymentMessage.model_fields) == REQUIRED_FIELDS
    assert all(info.is_required() for info in PaymentMessage.model_fields.values())


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param({"priority": "high"}, id="unknown-field"),
        pytest.param({"envelope": {}}, id="nested-envelope"),
        pytest.param({"schema_version": "1"}, id="schema-version"),
    ],
)
def test_unknown_field_is_refused(extra: dict[str, Any]) -> None:
    (name,) = extra
    exc, errors = _errors_for(make_wire_dict(**extra))

    assert [(error["loc"], error["type"]) for error in errors] == [((name,), "extra_forbidden")]
    assert name in str(exc)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"{", id="truncated"),
        pytest.param(b"[]", id="array"),
        pytest.param(b"null", id="null"),
    ],
)
def test_body_that_is_not_a_json_object_is_refused(body: bytes) -> None:
    with pytest.raises(ValidationError):
        PaymentMessage.from_wire(body)


# The publisher builds messages from Python values: strict mode applies there too.
@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        pytest.param("amount_cents", 150000.0, "valid integer", id="amount-float"),
        pytest.param("amount_cents", True, "not a boolean", id="amount-bool"),
        pytest.param("amount_cents", "150000", "valid integer", id="amount-string"),
        pytest.param("timestamp_utc", datetime(2025, 5, 1, 2, 14, 33), "timezone", id="timestamp-naive"),
        pytest.param(
            "timestamp_utc",
            datetime(2025, 5, 1, 12, 14, 33, tzinfo=timezone(timedelta(hours=10))),
            "must be in UTC",
            id="timestamp-plus-10",
        ),
        pytest.param("timestamp_utc", 1714529673, "valid datetime", id="timestamp-number"),
        pytest.param("message_id", UUID(int=1).int, "UUID", id="message-id-int"),
        pytest.param("retry_count", -1, "greater than or equal to 0", id="retry-negative"),
    ],
)
def test_invalid_python_value_is_refused(field: str, value: object, fragment: str) -> None:
    with pytest.raises(ValidationError) as excinfo:
        make_message(**{field: value})

    errors = excinfo.value.errors()
    assert [error["loc"] for error in errors] == [(field,)]
    assert fragment in errors[0]["msg"]

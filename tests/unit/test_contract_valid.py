"""Valid payment messages: round trip, flat wire shape, accepted edge values, helper methods."""

import json
import time
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given, settings
from pydantic import ValidationError

from contracts import PaymentMessage, wire_timestamp
from contracts.currency import NON_MONETARY_CODES, active_currency_codes, is_active_currency
from tests.utils.factories import make_message, make_wire_dict, to_wire_bytes
from tests.utils.strategies import payment_messages, wire_dicts

# The reference message layout (DESIGN.md): envelope, then payload, then control.
# No example database: unit tests write nothing to disk. A failure still prints its falsifying example.
no_database = settings(database=None)

# The contract's limits, written here as literals: a test that imported them would follow a changed limit.
LARGEST_AMOUNT_CENTS = 100_000_000_000_000  # one trillion major units
LONGEST_TTL_SECONDS = 2_592_000  # 30 days

WIRE_KEYS_IN_ORDER = [
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


@no_database
@given(payment_messages())
def test_round_trip_through_the_wire_is_lossless(message: PaymentMessage) -> None:
    assert PaymentMessage.from_wire(message.to_wire()) == message
    assert PaymentMessage.from_wire(message.to_wire().decode()) == message


@no_database
@given(payment_messages())
def test_wire_json_is_flat_with_only_validation_result_nested(message: PaymentMessage) -> None:
    wire = json.loads(message.to_wire())

    assert list(wire) == WIRE_KEYS_IN_ORDER
    assert not {"envelope", "payload", "control"} & set(wire)
    nested = {key for key, value in wire.items() if isinstance(value, dict | list)}
    assert nested == {"validation_result"}
    assert set(wire["validation_result"]) == {"passed", "checks"}


@no_database
@given(payment_messages())
def test_timestamp_is_serialised_in_utc_with_z_suffix(message: PaymentMessage) -> None:
    serialised = json.loads(message.to_wire())["timestamp_utc"]

    assert serialised.endswith("Z")
    assert datetime.fromisoformat(serialised) == message.timestamp_utc


@no_database
@given(wire_dicts())
def test_wire_dict_validates_back_to_the_same_body(wire: dict[str, Any]) -> None:
    assert json.loads(PaymentMessage.from_wire(to_wire_bytes(wire)).to_wire()) == wire


def test_reference_example_parses_with_its_values() -> None:
    # The reference body, with a UUID message_id (the contract's type) and the tenant added.
    body = """{
      "message_id": "7f3a91bc-4e2d-4c8a-b1f0-9d3e2a1c5b7d",
      "timestamp_utc": "2025-05-01T02:14:33.421Z",
      "correlation_id": "bulk_ANZ_20250501_batch_0042",
      "tenant_id": "anz",
      "payment_reference": "PAY-ANZ-2025-00198432",
      "amount_cents": 150000,
      "currency": "AUD",
      "debtor_bsb": "012-345",
      "debtor_account": "123456789",
      "creditor_bsb": "033-001",
      "creditor_account": "987654321",
      "validation_result": {"passed": true, "checks": ["customer_exists", "bsb_valid", "limit_ok"]},
      "retry_count": 0,
      "ttl_seconds": 86400
    }"""

    message = PaymentMessage.from_wire(body)

    assert message.message_id == UUID("7f3a91bc-4e2d-4c8a-b1f0-9d3e2a1c5b7d")
    assert message.timestamp_utc == datetime(2025, 5, 1, 2, 14, 33, 421_000, tzinfo=UTC)
    assert message.amount_cents == 150_000
    assert isinstance(message.amount_cents, int)
    assert message.validation_result.checks == ["customer_exists", "bsb_valid", "limit_ok"]
    assert message.ttl_seconds == 86_400


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("amount_cents", 1, id="amount-smallest"),
        pytest.param("amount_cents", LARGEST_AMOUNT_CENTS, id="amount-largest"),
        pytest.param("retry_count", 0, id="retry-zero"),
        pytest.param("retry_count", 100, id="retry-largest"),
        pytest.param("ttl_seconds", 1, id="ttl-smallest"),
        pytest.param("ttl_seconds", LONGEST_TTL_SECONDS, id="ttl-largest"),
        pytest.param("payment_reference", "P" * 35, id="reference-35-chars"),
        pytest.param("payment_reference", "INV/2025/0001_a.b-c", id="reference-punctuation"),
        pytest.param("correlation_id", "b" * 64, id="correlation-64-chars"),
        pytest.param("tenant_id", "ab", id="tenant-2-chars"),
        pytest.param("tenant_id", "t" * 32, id="tenant-32-chars"),
        pytest.param("tenant_id", "acme-au_2", id="tenant-dash-underscore"),
        pytest.param("debtor_account", "123456", id="account-6-digits"),
        pytest.param("creditor_account", "1234567890", id="account-10-digits"),
        pytest.param("currency", "USD", id="currency-usd"),
        pytest.param("currency", "JPY", id="currency-jpy"),
        pytest.param("validation_result", {"passed": False, "checks": []}, id="validation-empty-checks"),
    ],
)
def test_boundary_values_are_accepted(field: str, value: object) -> None:
    message = PaymentMessage.from_wire(to_wire_bytes(make_wire_dict(**{field: value})))

    assert json.loads(message.to_wire())[field] == value


@pytest.mark.parametrize(
    "timestamp",
    [
        pytest.param("2025-05-01T02:14:33Z", id="z"),
        pytest.param("2025-05-01T02:14:33.421+00:00", id="plus-zero-offset"),
        pytest.param("2025-05-01T02:14:33.421-00:00", id="minus-zero-offset"),
        pytest.param("2025-05-01t02:14:33.421z", id="lower-case-t-z"),
    ],
)
def test_utc_timestamps_in_any_rfc3339_spelling_are_normalised_to_z(timestamp: str) -> None:
    message = PaymentMessage.from_wire(to_wire_bytes(make_wire_dict(timestamp_utc=timestamp)))

    assert message.timestamp_utc.tzinfo is UTC
    assert message.timestamp_utc.replace(microsecond=0) == datetime(2025, 5, 1, 2, 14, 33, tzinfo=UTC)
    assert json.loads(message.to_wire())["timestamp_utc"].endswith("Z")


def test_zero_offset_datetime_from_python_is_normalised_to_utc() -> None:
    at = datetime(2025, 5, 1, 2, 14, 33, tzinfo=timezone(timedelta(0), "GMT"))

    message = make_message(timestamp_utc=at)

    assert message.timestamp_utc.tzinfo is UTC
    assert message.timestamp_utc == at


def test_upper_case_uuid_is_accepted_and_written_lower_case() -> None:
    message_id = "7F3A91BC-4E2D-4C8A-B1F0-9D3E2A1C5B7D"

    message = PaymentMessage.from_wire(to_wire_bytes(make_wire_dict(message_id=message_id)))

    assert json.loads(message.to_wire())["message_id"] == message_id.lower()


def test_every_valid_amount_is_exact_for_json_readers_using_doubles() -> None:
    # JavaScript and many JSON libraries read numbers as IEEE 754 doubles: exact only up to 2**53.
    assert LARGEST_AMOUNT_CENTS <= 2**53
    assert float(LARGEST_AMOUNT_CENTS) == LARGEST_AMOUNT_CENTS
    for amount in (LARGEST_AMOUNT_CENTS - 1, LARGEST_AMOUNT_CENTS):
        message = PaymentMessage.from_wire(to_wire_bytes(make_wire_dict(amount_cents=amount)))
        assert f'"amount_cents":{amount},' in message.to_wire().decode()
    with pytest.raises(ValidationError, match="less than or equal to 100000000000000"):
        PaymentMessage.from_wire(to_wire_bytes(make_wire_dict(amount_cents=LARGEST_AMOUNT_CENTS + 1)))


def test_active_currencies_come_from_iso_4217_without_non_monetary_units() -> None:
    codes = active_currency_codes()

    assert {"AUD", "USD", "EUR", "NZD", "GBP", "JPY"} <= codes
    assert not codes & NON_MONETARY_CODES
    assert not {"DEM", "FRF", "ITL", "HRK"} & codes  # withdrawn currencies
    assert all(len(code) == 3 and code.isupper() for code in codes)
    assert is_active_currency("AUD")
    assert not is_active_currency("aud")


def test_factories_produce_fresh_ids() -> None:
    first, second = make_message(), make_message()

    assert first.message_id != second.message_id
    assert first.tenant_id != second.tenant_id
    assert first.correlation_id != second.correlation_id
    assert first.message_id.version == 7
    assert make_wire_dict()["message_id"] != make_wire_dict()["message_id"]


def test_factory_overrides_are_applied() -> None:
    message = make_message(amount_cents=42, currency="NZD", retry_count=2)
    wire = make_wire_dict(amount_cents=42, extra_key="kept")

    assert (message.amount_cents, message.currency, message.retry_count) == (42, "NZD", 2)
    assert wire["amount_cents"] == 42
    assert wire["extra_key"] == "kept"


def test_message_is_immutable() -> None:
    message = make_message()

    with pytest.raises(ValidationError, match="frozen"):
        message.amount_cents = 1  # type: ignore[misc]


def test_with_retry_increments_only_the_retry_count() -> None:
    message = make_message(retry_count=2)

    retried = message.with_retry()

    assert retried.retry_count == 3
    assert retried.model_dump(exclude={"retry_count"}) == message.model_dump(exclude={"retry_count"})
    assert message.retry_count == 2


def test_with_retry_refuses_to_go_past_the_contract_limit() -> None:
    message = make_message(retry_count=100)

    with pytest.raises(ValidationError) as excinfo:
        message.with_retry()

    assert [error["loc"] for error in excinfo.value.errors()] == [("retry_count",)]


def test_expiry_is_measured_from_the_timestamp() -> None:
    at = datetime(2025, 5, 1, 0, 0, tzinfo=UTC)
    message = make_message(timestamp_utc=at, ttl_seconds=60)

    assert message.expires_at == at + timedelta(seconds=60)
    assert not message.is_expired(at + timedelta(seconds=59))
    assert message.is_expired(at + timedelta(seconds=60))
    assert message.remaining_ttl(at + timedelta(seconds=20)) == timedelta(seconds=40)
    assert message.remaining_ttl(at + timedelta(hours=1)) == timedelta(0)


@pytest.mark.parametrize("local_zone", ["UTC", "Australia/Sydney", "America/New_York"])
def test_wire_timestamps_are_utc_with_z_whatever_the_machines_time_zone(
    monkeypatch: pytest.MonkeyPatch, local_zone: str
) -> None:
    monkeypatch.setenv("TZ", local_zone)
    time.tzset()
    try:
        sydney = timezone(timedelta(hours=10))
        assert wire_timestamp(datetime(2025, 5, 1, 12, 14, 33, 421_000, tzinfo=sydney)) == "2025-05-01T02:14:33.421000Z"
        assert wire_timestamp(datetime(2025, 5, 1, 2, 14, 33, tzinfo=UTC)) == "2025-05-01T02:14:33Z"
    finally:
        monkeypatch.undo()
        time.tzset()

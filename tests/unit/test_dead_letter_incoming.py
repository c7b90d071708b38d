"""Reading a dead letter: reason, failure event, dedup key and payment fields, never raising on odd input."""

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.deadletters.incoming import IncomingDeadLetter, json_safe, to_row
from app.messaging import headers
from tests.utils.factories import make_wire_dict, to_wire_bytes

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def consumer_style(reason: str = "retries_exhausted", failed_at: str = "2026-05-01T11:59:00+00:00") -> dict[str, Any]:
    return {
        headers.TENANT: "anz",
        headers.REASON: reason,
        headers.ERROR_TYPE: "CoreBankingTimeout",
        headers.ERROR_MESSAGE: "timed out",
        headers.ATTEMPTS: 4,
        headers.FAILED_AT: failed_at,
        headers.ORIGINAL_QUEUE: "payments.work",
    }


def broker_style(
    reason: str, at: datetime, queue: str = "payments.work", extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    death = {"count": 1, "reason": reason, "queue": queue, "time": at, "exchange": "payments", "routing-keys": ["a"]}
    return {headers.TENANT: "anz", "x-death": [death], "x-first-death-reason": reason, **(extra or {})}


def test_a_consumer_dead_letter_keeps_the_consumers_reason_and_payment_fields() -> None:
    wire = make_wire_dict(tenant_id="anz", amount_cents=999, currency="USD")
    row = to_row(IncomingDeadLetter(to_wire_bytes(wire), consumer_style(), wire["message_id"]), NOW)
    assert row["reason"] == "retries_exhausted"
    assert (row["error_type"], row["error_message"], row["attempts"]) == ("CoreBankingTimeout", "timed out", 4)
    assert row["last_failed_at"] == datetime(2026, 5, 1, 11, 59, tzinfo=UTC)
    assert (row["amount_cents"], row["currency"], row["tenant_id"]) == (999, "USD", "anz")
    assert row["correlation_id"] == wire["correlation_id"]
    assert str(row["message_id"]) == wire["message_id"]
    assert row["original_queue"] == "payments.work"


def test_the_consumers_reason_wins_over_x_death_left_by_trips_round_the_delay_queues() -> None:
    at = datetime(2026, 5, 1, 11, 0)
    mixed = {**broker_style("expired", at, queue="payments.work.retry.0"), **consumer_style("permanent_failure")}
    assert to_row(IncomingDeadLetter(b"{}", mixed), NOW)["reason"] == "permanent_failure"


def test_broker_reasons_are_mapped_and_the_x_death_time_is_the_failure_time() -> None:
    at = datetime(2026, 5, 1, 11, 30)  # AMQP timestamps arrive naive: UTC
    for broker, ours in (("expired", "expired"), ("delivery_limit", "retries_exhausted"), ("rejected", "rejected")):
        row = to_row(IncomingDeadLetter(b"{}", broker_style(broker, at)), NOW)
        assert row["reason"] == ours
        assert row["last_failed_at"] == at.replace(tzinfo=UTC)
        assert row["error_type"] == "BrokerDeadLetter"
        assert row["original_queue"] == "payments.work"


def test_a_crash_loop_counts_its_deliveries() -> None:
    raw = broker_style("delivery_limit", datetime(2026, 5, 1), extra={"x-delivery-count": 20})
    assert to_row(IncomingDeadLetter(b"{}", raw), NOW)["attempts"] == 21


def test_the_same_event_gives_the_same_dedup_key_and_a_later_event_another() -> None:
    body = to_wire_bytes(make_wire_dict())
    first = to_row(IncomingDeadLetter(body, consumer_style(failed_at="2026-05-01T11:00:00+00:00")), NOW)
    again = to_row(IncomingDeadLetter(body, consumer_style(failed_at="2026-05-01T11:00:00+00:00")), NOW)
    later = to_row(IncomingDeadLetter(body, consumer_style(failed_at="2026-05-01T11:30:00+00:00")), NOW)
    assert first["dedup_key"] == again["dedup_key"]
    assert later["dedup_key"] != first["dedup_key"]


def test_a_body_without_message_id_is_identified_by_its_hash() -> None:
    row_a = to_row(IncomingDeadLetter(b"garbage-a", consumer_style("invalid")), NOW)
    row_b = to_row(IncomingDeadLetter(b"garbage-b", consumer_style("invalid")), NOW)
    assert row_a["message_id"] is None
    assert row_a["dedup_key"].startswith("sha256:")
    assert row_a["dedup_key"] != row_b["dedup_key"]


def test_without_reason_or_time_the_reason_is_unknown_and_the_headers_name_the_event() -> None:
    row = to_row(IncomingDeadLetter(b"x", {"seq": 1}), NOW)
    other = to_row(IncomingDeadLetter(b"x", {"seq": 2}), NOW)
    assert row["reason"] == "unknown"
    assert row["last_failed_at"] == NOW
    assert row["dedup_key"] != other["dedup_key"]


def test_payment_fields_are_read_leniently() -> None:
    wrong_types = json.dumps({"amount_cents": 10.5, "currency": "dollars", "payment_reference": 7}).encode()
    row = to_row(IncomingDeadLetter(wrong_types, {}), NOW)
    assert (row["amount_cents"], row["currency"], row["payment_reference"]) == (None, None, None)
    assert to_row(IncomingDeadLetter(json.dumps({"amount_cents": True}).encode(), {}), NOW)["amount_cents"] is None


def test_header_values_become_json_postgresql_can_store() -> None:
    value = {
        "when": datetime(2026, 5, 1, 10, 0),
        "price": Decimal("1.50"),
        "blob": b"\xff\x00",
        "text": "a\x00b",
        "nested": [{"x": float("nan")}],
    }
    safe = json_safe(value)
    assert safe == {
        "when": "2026-05-01T10:00:00+00:00",
        "price": "1.50",
        "blob": {"base64": "/wA="},
        "text": "ab",
        "nested": [{"x": "nan"}],
    }
    json.dumps(safe)


def test_stored_text_has_no_nul_and_fits_its_column() -> None:
    raw = {headers.TENANT: "t\x00" + "x" * 100, headers.REASON: "r" * 100, headers.FAILED_AT: "not a time"}
    row = to_row(IncomingDeadLetter(b"", raw), NOW)
    assert row["tenant_id"] == "t" + "x" * 31
    assert len(row["reason"]) == 32
    assert row["last_failed_at"] == NOW


header_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary() | st.datetimes(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(
    body=st.binary(max_size=200),
    raw=st.dictionaries(
        st.sampled_from([headers.TENANT, headers.REASON, headers.FAILED_AT, headers.ATTEMPTS, "x-death", "other"]),
        header_values,
    ),
    message_id=st.none() | st.text(max_size=40),
)
def test_any_input_gives_a_storable_row(body: bytes, raw: dict[str, object], message_id: str | None) -> None:
    row = to_row(IncomingDeadLetter(body, raw, message_id), NOW)
    assert row["reason"]
    assert row["body"] == body
    assert row["last_failed_at"].utcoffset() == timedelta(0)
    json.dumps(row["headers"])
    assert "\x00" not in json.dumps(row["headers"], ensure_ascii=False)

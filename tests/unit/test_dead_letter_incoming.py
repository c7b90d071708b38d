"""Reading a dead letter: reason, failure time, dedup key and payment fields, never raising on odd input."""

import hashlib
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.deadletters.incoming import Archiving, IncomingDeadLetter, json_safe, to_row
from app.messaging import headers
from app.tenancy.identity import PublisherIdentity
from tests.utils.factories import make_wire_dict, to_wire_bytes

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
SERVICE = "remit-service"  # the trusted login the consumer dead-letters as
LIMIT = 1024
ARCHIVING = Archiving(PublisherIdentity(frozenset({SERVICE}), "prod"), LIMIT)


def row_of(
    body: bytes,
    raw: dict[str, Any],
    message_id: str | None = None,
    user_id: str | None = SERVICE,
    routing_key: str | None = "anz.payment",
) -> dict[str, Any]:
    return to_row(IncomingDeadLetter(body, raw, message_id, None, user_id, routing_key), NOW, ARCHIVING)


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
    row = row_of(to_wire_bytes(wire), consumer_style(), wire["message_id"])
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
    assert row_of(b"{}", mixed)["reason"] == "permanent_failure"


def test_broker_reasons_are_mapped_and_the_x_death_time_is_the_failure_time() -> None:
    at = datetime(2026, 5, 1, 11, 30)  # AMQP timestamps arrive naive: UTC
    for broker, ours in (("expired", "expired"), ("delivery_limit", "retries_exhausted"), ("rejected", "rejected")):
        row = row_of(b"{}", broker_style(broker, at))
        assert row["reason"] == ours
        assert row["last_failed_at"] == at.replace(tzinfo=UTC)
        assert row["error_type"] == "BrokerDeadLetter"
        assert row["original_queue"] == "payments.work"


def test_a_crash_loop_counts_its_deliveries() -> None:
    raw = broker_style("delivery_limit", datetime(2026, 5, 1), extra={"x-delivery-count": 20})
    assert row_of(b"{}", raw)["attempts"] == 21


def test_copies_of_one_failure_share_a_key_whenever_they_failed() -> None:
    # Issue 37 A: the consumer killed between a refusal's dead letter and its ack dead-letters the redelivery again,
    # with a later remit-failed-at; the core replays the same refusal. One failure, one dead letter.
    wire = make_wire_dict(tenant_id="anz")
    body = to_wire_bytes(wire)
    first = row_of(body, consumer_style("account_closed", "2026-05-01T11:00:00+00:00"), wire["message_id"])
    again = row_of(body, consumer_style("account_closed", "2026-05-01T11:00:00+00:00"), wire["message_id"])
    later = row_of(body, consumer_style("account_closed", "2026-05-01T11:30:00+00:00"), wire["message_id"])
    assert first["dedup_key"] == again["dedup_key"] == later["dedup_key"]
    assert later["last_failed_at"] == datetime(2026, 5, 1, 11, 30, tzinfo=UTC)


def test_the_brokers_copies_and_the_consumers_of_one_payment_share_a_key() -> None:
    # Expired twice (a copy the relay published again), at the delivery limit, and the consumer's own verdict on
    # a retry (its retry_count differs: the digest of what the payment moves does not).
    wire = make_wire_dict(tenant_id="anz")
    mid, tenant_user = wire["message_id"], "tenant-anz@prod"
    keys = {
        row_of(to_wire_bytes(wire), broker_style("expired", datetime(2026, 5, 1, 11, 0)), mid, tenant_user)[
            "dedup_key"
        ],
        row_of(to_wire_bytes(wire), broker_style("expired", datetime(2026, 5, 1, 11, 5)), mid, tenant_user)[
            "dedup_key"
        ],
        row_of(to_wire_bytes(wire), broker_style("delivery_limit", datetime(2026, 5, 1, 11, 6)), mid, tenant_user)[
            "dedup_key"
        ],
        row_of(to_wire_bytes({**wire, "retry_count": 3}), consumer_style(), mid)["dedup_key"],
    }
    assert len(keys) == 1, keys


def test_a_replays_failure_is_a_new_dead_letter_and_each_replay_its_own() -> None:
    wire = make_wire_dict(tenant_id="anz")
    body = to_wire_bytes(wire)
    original = row_of(body, consumer_style("account_closed"), wire["message_id"])
    replayed = row_of(body, {**consumer_style("account_closed"), headers.REPLAY_OF: 41}, wire["message_id"])
    again = row_of(body, {**consumer_style("account_closed"), headers.REPLAY_OF: 42}, wire["message_id"])
    assert replayed["replay_of"] == 41
    assert len({original["dedup_key"], replayed["dedup_key"], again["dedup_key"]}) == 3
    # Only a trusted publisher's remit-replay-of opens a new chain: a tenant's own is a claim.
    forged = {**broker_style("expired", datetime(2026, 5, 1, 11, 0)), headers.REPLAY_OF: 41}
    plain = broker_style("expired", datetime(2026, 5, 1, 11, 1))
    tenant_user = "tenant-anz@prod"
    claimed = row_of(body, forged, wire["message_id"], tenant_user)
    assert claimed["replay_of"] is None
    assert claimed["security_event"]  # a forged remit-* header is a security event: filed apart, by its reason
    assert claimed["dedup_key"] != row_of(body, plain, wire["message_id"], tenant_user)["dedup_key"]


def test_a_quarantined_copy_never_hides_in_an_ordinary_failure_of_the_same_payment() -> None:
    wire = make_wire_dict(tenant_id="anz")
    body = to_wire_bytes(wire)
    refused = row_of(body, consumer_style("account_closed"), wire["message_id"])
    mismatch = row_of(body, consumer_style("tenant_mismatch"), wire["message_id"])
    assert (refused["security_event"], mismatch["security_event"]) == (False, True)
    assert refused["dedup_key"] != mismatch["dedup_key"]
    later = row_of(body, consumer_style("tenant_mismatch", "2026-05-01T11:59:30+00:00"), wire["message_id"])
    assert later["dedup_key"] == mismatch["dedup_key"]


def test_a_body_without_message_id_is_identified_by_its_hash() -> None:
    row_a = row_of(b"garbage-a", consumer_style("invalid"))
    row_b = row_of(b"garbage-b", consumer_style("invalid"))
    assert row_a["message_id"] is None
    assert row_a["dedup_key"].startswith("anz|sha256:")
    assert row_a["dedup_key"] != row_b["dedup_key"]


def test_without_reason_or_time_the_reason_is_unknown_and_the_headers_name_the_event() -> None:
    # No message_id: not a payment, so no attempt chain to follow; the failure event is the identity.
    row = row_of(b"x", {"seq": 1})
    other = row_of(b"x", {"seq": 2})
    assert row["reason"] == "unknown"
    assert row["last_failed_at"] == NOW
    assert row["dedup_key"] != other["dedup_key"]
    assert row["dedup_key"] == row_of(b"x", {"seq": 1})["dedup_key"]


def test_payment_fields_are_read_leniently() -> None:
    wrong_types = json.dumps({"amount_cents": 10.5, "currency": "dollars", "payment_reference": 7}).encode()
    row = row_of(wrong_types, {})
    assert (row["amount_cents"], row["currency"], row["payment_reference"]) == (None, None, None)
    assert row_of(json.dumps({"amount_cents": True}).encode(), {})["amount_cents"] is None


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
    row = row_of(b"", raw)
    assert row["tenant_id"] is None  # not a tenant id at all: a claim, cleaned to fit its column
    assert row["claimed_tenant"] == "t" + "x" * 31
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
        st.sampled_from(
            [
                headers.TENANT,
                headers.IDENTITY_TENANT,
                headers.REASON,
                headers.FAILED_AT,
                headers.ATTEMPTS,
                headers.CLAIMS,
                headers.BODY_TRUNCATED,
                headers.BODY_LENGTH,
                headers.BODY_SHA256,
                "x-death",
                "other",
            ]
        ),
        header_values,
    ),
    message_id=st.none() | st.text(max_size=40),
    user_id=st.sampled_from([None, SERVICE, "tenant-anz@prod", "stranger"]),
    routing_key=st.none() | st.text(max_size=40),
)
def test_any_input_gives_a_storable_row(
    body: bytes, raw: dict[str, object], message_id: str | None, user_id: str | None, routing_key: str | None
) -> None:
    row = row_of(body, raw, message_id, user_id, routing_key)
    assert row["reason"]
    assert row["body"] == body
    assert row["last_failed_at"].utcoffset() == timedelta(0)
    json.dumps(row["headers"])
    json.dumps(row["claims"])
    assert "\x00" not in json.dumps(row["headers"], ensure_ascii=False)
    if user_id != SERVICE:
        assert not any(name.startswith(headers.PREFIX) for name in row["headers"])


# Who is believed: a dead letter the broker made from a tenant's own message keeps that tenant's user_id.
FORGED = {headers.REASON: "retries_exhausted", headers.ERROR_TYPE: "CoreBankingTimeout", headers.ATTEMPTS: 4}


def test_remit_headers_from_a_tenant_are_claims_and_the_broker_and_login_decide() -> None:
    wire = make_wire_dict(tenant_id="westpac")
    raw = {**broker_style("expired", datetime(2026, 5, 1, 11, 0)), headers.TENANT: "westpac", **FORGED}
    row = row_of(to_wire_bytes(wire), raw, wire["message_id"], user_id="tenant-anz@prod")
    assert (row["reason"], row["tenant_id"], row["tenant_basis"]) == ("expired", "anz", "login")
    assert (row["error_type"], row["attempts"]) == ("BrokerDeadLetter", 0)
    assert row["claims"] == FORGED
    assert not any(name.startswith(headers.PREFIX) for name in row["headers"])
    assert row["headers"][headers.TENANT] == "westpac"  # kept as evidence
    assert (row["published_by"], row["claimed_tenant"], row["security_event"]) == ("tenant-anz@prod", "westpac", True)


def test_the_consumers_identity_headers_are_believed_from_the_service_login_only() -> None:
    raw = {
        **consumer_style("tenant_mismatch"),
        headers.TENANT: "westpac",
        headers.IDENTITY_TENANT: "anz",
        headers.PUBLISHED_BY: "tenant-anz@prod",
        headers.CLAIMS: FORGED,
    }
    row = row_of(b"{}", raw)
    assert (row["reason"], row["tenant_id"], row["tenant_basis"]) == ("tenant_mismatch", "anz", "trusted")
    assert (row["published_by"], row["claimed_tenant"], row["claims"]) == ("tenant-anz@prod", "westpac", FORGED)
    assert headers.CLAIMS not in row["headers"]
    assert row["security_event"]
    forged = row_of(b"{}", raw, user_id="tenant-westpac@prod")
    assert (forged["reason"], forged["tenant_id"], forged["published_by"]) == (
        "unknown",
        "westpac",
        "tenant-westpac@prod",
    )


def test_without_user_id_the_routing_key_decides_not_a_forged_x_death() -> None:
    # On 3.10 a publisher-supplied x-death entry keeps its routing keys; the delivered key is the real one.
    death = {"count": 2, "reason": "expired", "queue": "payments.work.basic", "routing-keys": ["westpac.payment"]}
    raw = {"x-death": [{**death, "time": datetime(2001, 1, 1)}], headers.TENANT: "westpac"}
    row = row_of(b"{}", raw, user_id=None, routing_key="anz.payment")
    assert (row["tenant_id"], row["tenant_basis"], row["reason"]) == ("anz", "routing_key", "expired")
    assert row["published_by"] is None
    assert row["claimed_tenant"] == "westpac"


def test_a_login_that_is_neither_trusted_nor_a_tenant_of_this_deployment_gets_no_tenant() -> None:
    for stranger in ("tenant-anz@staging", "someone"):
        row = row_of(b"{}", consumer_style(), user_id=stranger)
        assert (row["tenant_id"], row["tenant_basis"], row["reason"]) == (None, "none", "unknown")


def test_an_x_death_time_in_the_future_is_not_believed() -> None:
    assert row_of(b"{}", broker_style("expired", datetime(2099, 1, 1)))["last_failed_at"] == NOW


def test_the_same_message_id_and_event_of_two_tenants_are_two_dead_letters() -> None:
    body = to_wire_bytes(make_wire_dict())
    raw = broker_style("expired", datetime(2026, 5, 1, 11, 0))
    anz = row_of(body, raw, user_id="tenant-anz@prod")
    westpac = row_of(body, raw, user_id="tenant-westpac@prod")
    assert anz["message_id"] == westpac["message_id"]
    assert anz["dedup_key"] != westpac["dedup_key"]


def test_a_body_over_the_limit_is_stored_as_a_prefix_with_its_length_and_sha256() -> None:
    for size, truncated in ((LIMIT - 1, False), (LIMIT, False), (LIMIT + 1, True), (30 * LIMIT, True)):
        body = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
        row = row_of(body, consumer_style())
        assert (row["body_length"], row["body_truncated"]) == (size, truncated), size
        assert row["body"] == body[:1024]
        assert row["body_sha256"] == hashlib.sha256(body).hexdigest()


def test_a_prefix_the_consumer_cut_keeps_the_length_and_sha256_it_says_only_from_the_service() -> None:
    said = {headers.BODY_TRUNCATED: True, headers.BODY_LENGTH: 31_457_280, headers.BODY_SHA256: "ab" * 32}
    row = row_of(b'{"message_id": "cut', {**consumer_style(), **said})
    assert (row["body_length"], row["body_sha256"], row["body_truncated"]) == (31_457_280, "ab" * 32, True)
    assert (row["amount_cents"], row["message_id"]) == (None, None)  # a prefix is never read as a payment
    claimed = row_of(b"{}", {**consumer_style(), **said}, user_id="tenant-anz@prod")
    assert (claimed["body_length"], claimed["body_truncated"]) == (2, False)
    assert claimed["claims"][headers.BODY_LENGTH] == 31_457_280


def test_two_payments_under_one_id_expiring_in_the_same_second_are_two_dead_letters() -> None:
    # Found by the hostile-input run: x-death times have one-second resolution, so a reused id's two
    # different payments, expired together, used to share a dedup key and the second was dropped.
    wire = make_wire_dict(tenant_id="anz")
    other = {**wire, "amount_cents": wire["amount_cents"] + 1}
    raw = broker_style("expired", datetime(2026, 5, 1, 11, 0, tzinfo=UTC))
    tenant_user = "tenant-anz@prod"
    first = row_of(to_wire_bytes(wire), raw, wire["message_id"], tenant_user)
    redelivered = row_of(to_wire_bytes(wire), raw, wire["message_id"], tenant_user)
    second = row_of(to_wire_bytes(other), raw, wire["message_id"], tenant_user)
    assert first["dedup_key"] == redelivered["dedup_key"]
    assert second["dedup_key"] != first["dedup_key"]

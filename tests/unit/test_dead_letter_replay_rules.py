"""The replay rules, in isolation: what is replayed, resolved or refused, and why."""

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.deadletters.replay import Facts, Readable, decide
from app.deadletters.republish import fresh_body, replay_message
from app.messaging import headers
from contracts import wire_timestamp
from tests.utils.factories import make_wire_dict, to_wire_bytes

NOW = datetime.now(UTC)
FRESH = Facts(processed=False, replays_used=0, retention=timedelta(days=30))


@dataclass
class Row:
    status: str = "open"
    reason: str = "retries_exhausted"
    tenant_id: str | None = "anz"
    first_failed_at: datetime = NOW - timedelta(minutes=5)
    tenant_basis: str = "trusted"
    body_truncated: bool = False
    body: bytes = b""
    body_length: int = 0


def body(**overrides: Any) -> bytes:
    return to_wire_bytes(make_wire_dict(tenant_id="anz", retry_count=3, **overrides))


def verdict(row: Row, raw: bytes | None = None, facts: Facts = FRESH, force: bool = False) -> tuple[str, str]:
    decision = decide(row, Readable.of(raw or body()), facts, force, budget=3, now=NOW)
    return decision.verdict, decision.detail


def test_a_transient_failure_is_replayed() -> None:
    assert verdict(Row())[0] == "replay"


def test_an_already_processed_message_is_resolved_even_after_a_replay() -> None:
    processed = Facts(True, 1, timedelta(days=30))
    assert verdict(Row(), facts=processed)[0] == "resolve"
    assert verdict(Row(status="replayed"), facts=processed)[0] == "resolve"


@pytest.mark.parametrize("status", ["resolved", "discarded", "replayed"])
def test_closed_or_in_flight_dead_letters_are_refused(status: str) -> None:
    assert verdict(Row(status=status))[0] == "refuse"


@pytest.mark.parametrize(
    "reason",
    [
        "invalid",
        "permanent_failure",
        "unknown_tenant",
        "account_closed",
        "unknown_account",
        "insufficient_funds",
        "currency_not_held",
        "core_key_conflict",
        "oversize",
        "tenant_suspended",
    ],
)
def test_a_permanent_failure_needs_force(reason: str) -> None:
    refused, why = verdict(Row(reason=reason))
    assert (refused, "--force" in why) == ("refuse", True)
    assert verdict(Row(reason=reason), force=True)[0] == "replay"


def test_an_expired_dead_letter_is_refused_even_with_force_and_says_resubmit() -> None:
    refused, why = verdict(Row(reason="expired"), force=True)
    assert refused == "refuse"
    assert "new batch" in why


def test_a_malformed_body_is_refused_even_with_force() -> None:
    for raw in (b"{not json", b"[1, 2]", json.dumps({"amount_cents": 1}).encode()):
        assert verdict(Row(reason="invalid"), raw, force=True)[0] == "refuse"


def test_a_body_whose_tenant_is_not_its_publishers_is_never_replayed() -> None:
    refused, why = verdict(Row(tenant_id="westpac"), force=True)
    assert refused == "refuse"
    assert "publisher's identity" in why
    assert verdict(Row(tenant_id=None), force=True)[0] == "refuse"  # nobody's: nobody's to replay


def test_a_tenant_mismatch_is_never_replayed_not_even_with_force_nor_resolved() -> None:
    for facts in (FRESH, Facts(True, 0, timedelta(days=30))):
        refused, why = verdict(Row(reason="tenant_mismatch"), force=True, facts=facts)
        assert refused == "refuse"
        assert "never replayed, not even with --force" in why


def test_a_truncated_body_is_never_replayed_not_even_with_force() -> None:
    cut = Row(body_truncated=True, body=b"x" * 65536, body_length=31_457_280)
    refused, why = verdict(cut, force=True)
    assert refused == "refuse"
    assert "65536 of 31457280 bytes" in why


def test_a_dead_letter_archived_before_identities_were_recorded_needs_force() -> None:
    refused, why = verdict(Row(tenant_basis="legacy"))
    assert refused == "refuse"
    assert "--force" in why
    assert verdict(Row(tenant_basis="legacy"), force=True)[0] == "replay"


def test_a_message_older_than_the_idempotency_retention_is_refused_as_it_could_pay_twice() -> None:
    old = body(timestamp_utc=wire_timestamp(NOW - timedelta(days=31)), ttl_seconds=30 * 86_400)
    refused, why = verdict(Row(), old)
    assert refused == "refuse"
    assert "pay twice" in why


def test_the_replay_budget_stops_endless_loops() -> None:
    refused, why = verdict(Row(), facts=Facts(False, 3, timedelta(days=30)))
    assert refused == "refuse"
    assert "budget" in why
    assert verdict(Row(), facts=Facts(False, 2, timedelta(days=30)))[0] == "replay"


def test_a_payment_past_its_ttl_is_refused() -> None:
    stale = body(timestamp_utc=wire_timestamp(NOW - timedelta(hours=2)), ttl_seconds=3600)
    refused, why = verdict(Row(), stale)
    assert refused == "refuse"
    assert "TTL" in why


def test_the_replayed_body_resets_retry_count_and_keeps_envelope_and_payload() -> None:
    original = body()
    fresh = json.loads(fresh_body(original))
    assert fresh == {**json.loads(original), "retry_count": 0}


def test_the_replay_message_has_the_relays_properties_and_names_its_dead_letter() -> None:
    readable = Readable.of(body())
    assert readable.payment is not None
    assert readable.body is not None
    message, key = replay_message(readable.payment, readable.body, 42, "remit-service", NOW)
    assert key == "anz.payment"
    assert message.message_id == str(readable.payment.message_id)
    assert message.correlation_id == readable.payment.correlation_id
    assert message.user_id == "remit-service"
    assert message.headers == {headers.TENANT: "anz", headers.REPLAY_OF: 42}
    assert message.content_type == "application/json"
    assert message.delivery_mode == 2


def test_a_conflicting_duplicate_is_refused_even_though_its_id_was_processed() -> None:
    processed = Facts(True, 0, timedelta(days=30))  # the record is the other payment's, not this one's
    refused, why = verdict(Row(reason="duplicate_conflict"), facts=processed, force=True)
    assert (refused, "new message_id" in why) == ("refuse", True)

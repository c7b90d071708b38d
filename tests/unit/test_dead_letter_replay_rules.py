"""The replay rules, in isolation: what is replayed, resolved or refused, and why."""

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.consumer.core_outcomes import CoreAnswer
from app.deadletters.replay import FORCE, CoreKey, Decision, Facts, Readable, decide
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


# ---------------------------------------------------------------- with an external core: its word on the key


def at_core(status: str, generation: int = 1, raw: bytes = b"", **answer: Any) -> Facts:
    """FRESH, plus what the external core holds under the current key (generation) of the payment in `raw`."""
    message_id = json.loads(raw or body())["message_id"]
    key = f"anz:{message_id}" + ("" if generation == 1 else f":{generation}")
    said = CoreAnswer(idempotency_key=key, status=status, **answer)  # type: ignore[arg-type]
    return replace(FRESH, core=CoreKey(generation, key, said))


def decided(row: Row, facts: Facts, force: bool = False, raw: bytes | None = None) -> Decision:
    return decide(row, Readable.of(raw or body()), facts, force, budget=3, now=NOW)


def test_a_key_the_core_refused_for_good_is_a_new_attempt_under_the_next_generation_only_when_forced() -> None:
    raw = body()
    key = f"anz:{json.loads(raw)['message_id']}"
    refused = at_core("rejected", raw=raw, reason="account_closed")
    plain = decided(Row(reason="retries_exhausted"), refused, raw=raw)
    assert plain.verdict == "refuse"
    assert f"the core refused key {key} for good (account_closed): a replay under it is refused again" in plain.detail
    assert f"then use {FORCE}: the payment is sent as a new attempt under key {key}:2" in plain.detail
    forced = decided(Row(reason="account_closed"), refused, force=True, raw=raw)
    assert (forced.verdict, forced.new_generation, forced.refused_reason) == ("replay", 2, "account_closed")
    assert f"a new attempt under key {key}:2 (key generation 2)" in forced.detail
    third = decided(Row(reason="account_closed"), at_core("rejected", 2, raw, reason="account_closed"), True, raw)
    assert (third.new_generation, f"a new attempt under key {key}:3 (key generation 3)" in third.detail) == (3, True)


def test_a_key_the_core_booked_or_never_saw_is_sent_again_as_it_is() -> None:
    booked = decided(Row(), at_core("booked", transfer_id="42"))
    assert (booked.verdict, booked.new_generation) == ("replay", None)
    assert "the core booked key anz:" in booked.detail
    assert "(transfer 42)" in booked.detail
    unknown = decided(Row(reason="account_closed"), at_core("unknown", 2), force=True)
    assert (unknown.verdict, unknown.new_generation) == ("replay", None)  # generation 2 was opened, never sent
    assert "the core holds nothing under key anz:" in unknown.detail


def test_a_key_the_core_is_still_booking_is_refused_whatever_the_force() -> None:
    for reason, force in (("retries_exhausted", False), ("retries_exhausted", True), ("account_closed", True)):
        decision = decided(Row(reason=reason), at_core("in_progress"), force=force)
        assert (decision.verdict, decision.new_generation) == ("refuse", None)
        assert "the core is still booking a request under key anz:" in decision.detail


def test_another_transfer_booked_under_the_key_is_never_sent_anew() -> None:
    decision = decided(Row(reason="core_key_conflict"), at_core("booked", transfer_id="9"), force=True)
    assert decision.verdict == "refuse"
    assert "a new key would move it again" in decision.detail


def test_a_core_that_does_not_answer_refuses_a_refusals_replay_and_lets_a_transient_one_through() -> None:
    silent = replace(FRESH, core=CoreKey(1, "anz:x", None, "the core did not answer (ConnectError)"))
    refusal = decided(Row(reason="account_closed"), silent, force=True)
    assert (refusal.verdict, "could not be asked what it holds under key anz:x" in refusal.detail) == ("refuse", True)
    transient = decided(Row(), silent)
    assert (transient.verdict, transient.new_generation) == ("replay", None)
    assert "the core could not be asked about key anz:x (the core did not answer (ConnectError))" in transient.detail


def test_the_budget_and_the_ttl_are_checked_before_the_core_is_believed() -> None:
    used = replace(at_core("rejected", reason="account_closed"), replays_used=3)
    assert decided(Row(reason="account_closed"), used, force=True).verdict == "refuse"


# ---------------------------------------------------------------- who is told to force: only who may


def told(row: Row, facts: Facts = FRESH, raw: bytes | None = None, *, may_force: bool) -> str:
    decision = decide(row, Readable.of(raw or body()), facts, False, budget=3, now=NOW, may_force=may_force)
    assert decision.verdict == "refuse"
    return decision.detail


MESSAGE_ID = "01960000-0000-7000-8000-000000000042"
REFUSALS_THAT_FORCE_WOULD_LIFT = {
    "permanent failure": (Row(reason="account_closed"), FRESH),
    "archived before identities": (Row(tenant_basis="legacy"), FRESH),
    "refused by the core for good": (Row(), at_core("rejected", raw=body(message_id=MESSAGE_ID), reason="AC04")),
}


@pytest.mark.parametrize("case", REFUSALS_THAT_FORCE_WOULD_LIFT)
def test_a_tenant_is_told_to_ask_an_operator_and_an_operator_how_to_force(case: str) -> None:
    row, facts = REFUSALS_THAT_FORCE_WOULD_LIFT[case]
    raw = body(message_id=MESSAGE_ID)
    tenant = told(row, facts, raw, may_force=False)
    assert "ask an operator to force the replay (a tenant's key may not)" in tenant
    assert "--force" not in tenant
    assert '"force": true' not in tenant
    operator = told(row, facts, raw, may_force=True)
    assert f"use {FORCE}" in operator
    assert "ask an operator" not in operator


def test_a_tenant_mismatch_names_no_force_to_a_tenant() -> None:
    tenant = told(Row(reason="tenant_mismatch"), may_force=False)
    assert tenant.startswith("tenant_mismatch dead letters are never replayed: its publisher may not pay")
    assert "force" not in tenant
    assert "not even with --force" in told(Row(reason="tenant_mismatch"), may_force=True)

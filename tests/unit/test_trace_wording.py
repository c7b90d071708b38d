"""How a trace reads: delays precise when short and rounded when long, ages in their two largest units, and
a payment's state from its events (processed once booked; a refused replay changes nothing, nor does another row
with its reference, told as what it is)."""

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from app.tracing.events import same_reference_events
from app.tracing.model import Event
from app.tracing.service import state_of
from app.tracing.wording import age, delay

T0 = datetime(2025, 5, 1, 2, 14, 33, tzinfo=UTC)


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (None, ""),
        (0.0, "+0.00s"),
        (0.213, "+0.21s"),
        (9.994, "+9.99s"),
        (10.0, "+10.0s"),
        (59.94, "+59.9s"),
        (60.0, "+1m 0s"),
        (185.0, "+3m 5s"),
        (3_599.0, "+59m 59s"),
        (3_600.0, "+1h 0m"),
        (86_399.0, "+23h 59m"),
        (86_400.0, "+1d 0h"),
        (97_200.0, "+1d 3h"),
    ],
)
def test_delays(seconds: float | None, shown: str) -> None:
    assert delay(seconds) == shown


@pytest.mark.parametrize(("seconds", "shown"), [(0, "0s"), (59, "59s"), (60, "1m 0s"), (7_200, "2h 0m")])
def test_ages(seconds: int, shown: str) -> None:
    assert age(seconds) == shown


def event(stage: str, minutes: int, **details: object) -> Event:
    return Event(T0 + timedelta(minutes=minutes), stage, stage, dict(details))


def test_state_follows_the_last_event_that_changed_something() -> None:
    accepted, published = event("accepted", 0), event("published", 1)
    retrying = event("attempt_failed", 2, outcome="retrying")
    last_try = event("attempt_failed", 3, outcome="dead_lettered")
    dead = event("dead_lettered", 4, reason="retries_exhausted")
    refused = event("replay_refused", 5)
    assert state_of([accepted], booked=False) == "accepted"
    assert state_of([accepted, published], booked=False) == "published"
    assert state_of([accepted, published, retrying], booked=False) == "retrying"
    assert state_of([accepted, published, retrying, last_try], booked=False) == "dead_lettered"
    assert state_of([accepted, published, last_try, dead, refused], booked=False) == "dead_lettered"
    assert state_of([accepted, published, event("dead_lettered", 4, reason="expired")], booked=False) == "expired"
    assert state_of([accepted, dead, event("replayed", 6)], booked=False) == "replayed"
    assert state_of([accepted, dead, event("discarded", 6)], booked=False) == "discarded"
    assert state_of([event("rejected", 0)], booked=False) == "rejected"
    resubmitted = event("duplicate_refused", 9)  # a later file reused its reference: that row is not this payment
    assert state_of([accepted, published, last_try, dead, resubmitted], booked=False) == "dead_lettered"
    first_try = event("other_row_rejected", -1)  # an earlier row with the reference, rejected for its own faults
    assert state_of([first_try, accepted, published], booked=False) == "published"
    assert state_of([accepted, first_try], booked=False) == "accepted"


def test_a_booked_payment_is_processed_whatever_came_after() -> None:
    resolved = [event("accepted", 0), event("dead_lettered", 1, reason="x"), event("resolved", 2)]
    assert state_of(resolved, booked=True) == "processed"
    assert state_of([event("processed", 0, attempt=1)], booked=False) == "processed without a booking"


def _rejected_row(outcome: str, minutes: int, error: str) -> Any:
    """A batch_rejections row joined with its batch, as app/tracing/lookup.py reads it."""
    return SimpleNamespace(outcome=outcome, errors=[error], row_number=4, source_name="anz.csv",
                           correlation_id="bulk_anz_1", submitted_at=T0 + timedelta(minutes=minutes))  # fmt: skip


def test_other_rows_with_the_reference_are_told_as_other_rows() -> None:
    duplicate = _rejected_row("duplicate", 5, "payment_reference 'INV-1' was already accepted in an earlier batch")
    first_try = _rejected_row("invalid_account", -5, "creditor_account: String should match pattern ...")
    refused, earlier = same_reference_events([duplicate, first_try], booked=True)
    assert refused.stage == "duplicate_refused"
    assert refused.summary == (
        "row 4 of anz.csv (batch bulk_anz_1) reused this payment's reference and was refused as a duplicate of this "
        "payment (payment_reference 'INV-1' was already accepted in an earlier batch): that row moved no money; this "
        "payment was booked once"
    )
    assert earlier.stage == "other_row_rejected"
    assert earlier.summary.endswith("that row is not this payment")
    [unbooked] = same_reference_events([duplicate], booked=False)
    assert unbooked.summary.endswith("that row moved no money")

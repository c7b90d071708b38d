"""What became of an accepted payment, from the ledger and its latest dead letter (app/bankfiles/outcomes.py
gives each outcome its ISO 20022 status and reason)."""

from app.bankfiles import Outcome
from app.deadletters import reasons

# A discarded dead letter is a final no; its reason says which.
_DISCARDED = {
    reasons.RETRIES_EXHAUSTED: Outcome.RETRIES_EXHAUSTED,
    reasons.INVALID: Outcome.INVALID,
    reasons.OVERSIZE: Outcome.INVALID,
}
_CLOSED_ACCOUNT = "AccountClosed"  # the error type core banking's closed-account refusal is recorded with


def delivery_outcome(booked: bool, status: str | None, reason: str | None, error_type: str | None) -> Outcome:
    """`status`, `reason`, `error_type`: of the payment's latest dead letter, None when it has none."""
    if booked:
        return Outcome.BOOKED
    if status is None or status == reasons.REPLAYED:
        return Outcome.IN_FLIGHT  # not failed yet, or replayed and not failed again
    if reason == reasons.EXPIRED:
        return Outcome.EXPIRED  # never replayed: its time to live ran out
    if status == reasons.OPEN:
        return (
            Outcome.HELD_FOR_REVIEW
        )  # an operator may still replay it: telling the customer "rejected" could pay twice
    if reason == reasons.PERMANENT_FAILURE and error_type == _CLOSED_ACCOUNT:
        return Outcome.CLOSED_ACCOUNT
    return _DISCARDED.get(reason or "", Outcome.PERMANENT_FAILURE)

"""What a status report says of an accepted payment, from the ledger and its latest dead letter."""

import pytest

from app.bankfiles import Outcome, iso_status
from app.reporting.delivery_outcomes import delivery_outcome


@pytest.mark.parametrize(
    ("booked", "status", "reason", "error_type", "outcome", "iso"),
    [
        (True, None, None, None, Outcome.BOOKED, ("ACSC", None)),
        (True, "resolved", "retries_exhausted", None, Outcome.BOOKED, ("ACSC", None)),  # a replay booked it
        (False, None, None, None, Outcome.IN_FLIGHT, ("PDNG", None)),
        (False, "replayed", "retries_exhausted", None, Outcome.IN_FLIGHT, ("PDNG", None)),
        # open: an operator may still replay it, so never RJCT (the customer would resend and both could pay)
        (False, "open", "permanent_failure", "AccountClosed", Outcome.HELD_FOR_REVIEW, ("PDNG", None)),
        (False, "open", "retries_exhausted", "CoreBankingTimeout", Outcome.HELD_FOR_REVIEW, ("PDNG", None)),
        (False, "open", "expired", None, Outcome.EXPIRED, ("RJCT", "AB03")),  # expired is never replayed
        (False, "discarded", "permanent_failure", "AccountClosed", Outcome.CLOSED_ACCOUNT, ("RJCT", "AC04")),
        (False, "discarded", "retries_exhausted", "CoreBankingTimeout", Outcome.RETRIES_EXHAUSTED, ("RJCT", "FF10")),
        (False, "discarded", "invalid", "InvalidMessage", Outcome.INVALID, ("RJCT", "CH16")),
        (False, "discarded", "permanent_failure", "SomethingElse", Outcome.PERMANENT_FAILURE, ("RJCT", "MS03")),
    ],
)
def test_outcome_of_an_accepted_payment(
    booked: bool,
    status: str | None,
    reason: str | None,
    error_type: str | None,
    outcome: Outcome,
    iso: tuple[str, str | None],
) -> None:
    got = delivery_outcome(booked, status, reason, error_type)
    assert got is outcome
    assert (iso_status(got).status, iso_status(got).reason) == iso

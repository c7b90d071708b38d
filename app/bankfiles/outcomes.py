"""What became of each payment, in remit's words and in ISO 20022's (the one table; docs/bank-files.md shows it).

Statuses: ACSC accepted and settled (booked), PDNG pending, RJCT rejected. Reason codes come from ISO's
external status reason code list (ExternalStatusReason1Code).
"""

from dataclasses import dataclass
from enum import StrEnum


class Outcome(StrEnum):
    BOOKED = "booked"
    IN_FLIGHT = "in_flight"  # accepted, published, delivered or retrying: may still be booked
    HELD_FOR_REVIEW = "held_for_review"  # dead-lettered and open: an operator may still replay it
    CLOSED_ACCOUNT = "closed_account"
    OVER_LIMIT = "over_limit"
    DUPLICATE = "duplicate"
    EXPIRED = "expired"
    INVALID = "invalid"
    INVALID_ACCOUNT = "invalid_account"
    AMOUNT_PRECISION = "amount_precision"
    RETRIES_EXHAUSTED = "retries_exhausted"  # only once its dead letter is discarded; open, it is HELD_FOR_REVIEW
    PERMANENT_FAILURE = "permanent_failure"


ACSC, PDNG, RJCT = "ACSC", "PDNG", "RJCT"


@dataclass(frozen=True, slots=True)
class IsoStatus:
    status: str
    reason: str | None = None


OUTCOMES: dict[Outcome, IsoStatus] = {
    Outcome.BOOKED: IsoStatus(ACSC),
    Outcome.IN_FLIGHT: IsoStatus(PDNG),
    # Not RJCT: a replay could still book it, and a customer told "rejected" would send it again.
    Outcome.HELD_FOR_REVIEW: IsoStatus(PDNG),
    Outcome.CLOSED_ACCOUNT: IsoStatus(RJCT, "AC04"),  # ClosedAccountNumber
    Outcome.OVER_LIMIT: IsoStatus(RJCT, "AM02"),  # NotAllowedAmount: above the allowed maximum
    Outcome.DUPLICATE: IsoStatus(RJCT, "AM05"),  # Duplication
    Outcome.EXPIRED: IsoStatus(RJCT, "AB03"),  # AbortedSettlementTimeout: its time to live ran out unbooked
    Outcome.INVALID: IsoStatus(RJCT, "CH16"),  # ElementContentFormallyIncorrect
    Outcome.INVALID_ACCOUNT: IsoStatus(RJCT, "AC01"),  # IncorrectAccountNumber: IBAN, other scheme, bad digits
    Outcome.AMOUNT_PRECISION: IsoStatus(RJCT, "CH20"),  # DecimalPointsNotCompatibleWithCurrency
    Outcome.RETRIES_EXHAUSTED: IsoStatus(RJCT, "FF10"),  # BankSystemProcessingError: core banking unreachable
    Outcome.PERMANENT_FAILURE: IsoStatus(RJCT, "MS03"),  # NotSpecifiedReasonAgentGenerated
}


def iso_status(outcome: Outcome) -> IsoStatus:
    return OUTCOMES[outcome]

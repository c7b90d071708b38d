"""The core's refusals in remit's words: each a permanent failure with a dead-letter reason of its own.

The core sends a reason (docs/core-banking.md, "Refusals are results") and the party it is about; the
message says which side and why, never an account number.
"""

import re

from app.errors import (
    AccountClosed,
    CoreRefusal,
    CurrencyNotHeld,
    InsufficientFunds,
    TransferKeyConflict,
    UnknownAccount,
)

_REFUSALS: dict[str, tuple[type[CoreRefusal], str]] = {
    "account_closed": (AccountClosed, "the {party} account is closed in this currency"),
    "unknown_account": (UnknownAccount, "core banking has no {party} account with this BSB and number"),
    "insufficient_funds": (InsufficientFunds, "the {party} account's balance is below the amount"),
    "currency_not_held": (CurrencyNotHeld, "the {party} account does not hold this currency"),
}
_PARTIES = frozenset({"debtor", "creditor"})
_DIGIT_RUN = re.compile(r"\d{6,}")


def quote_core(text: str, limit: int) -> str:
    """Words of the core's own, fit for a log line, a header or a table: short, and no run of digits long
    enough to be an account number (the reference core never sends one; another core might)."""
    return _DIGIT_RUN.sub(lambda m: "*" * len(m[0]), text[:limit])


def refusal(reason: str | None, party: str | None) -> CoreRefusal:
    """The permanent failure for a refusal; a reason remit does not know is a plain CoreRefusal
    (`permanent_failure`), still permanent: the core recorded it under the key for good."""
    known = _REFUSALS.get(reason or "")
    if known is None:
        shown = quote_core(str(reason), 40)
        return CoreRefusal(f"core banking refused the transfer for a reason remit does not know ({shown!r})")
    error_class, why = known
    whose = party if party in _PARTIES else "debtor or creditor"
    return error_class(f"core banking refused the transfer: {why.format(party=whose)} ({error_class.iso_reason})")


def key_conflict() -> TransferKeyConflict:
    return TransferKeyConflict(
        "core banking holds this payment's idempotency key for a different transfer: this message is not the "
        "payment it booked or refused under that message_id; not sent again, look at both"
    )

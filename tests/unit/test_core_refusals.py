"""The core's refusals mapped onto remit's failure classes: permanent, each with its own dead-letter reason."""

import re

import pytest

from app.consumer.core_refusals import key_conflict, quote_core, refusal
from app.errors import AccountClosed, CoreRefusal, CurrencyNotHeld, InsufficientFunds, UnknownAccount


@pytest.mark.parametrize(
    ("core_reason", "party", "error_class", "dead_letter_reason", "iso", "says"),
    [
        ("account_closed", "creditor", AccountClosed, "account_closed", "AC04", "the creditor account is closed"),
        ("unknown_account", "debtor", UnknownAccount, "unknown_account", "AC01", "no debtor account"),
        ("insufficient_funds", "debtor", InsufficientFunds, "insufficient_funds", "AM04", "debtor account's balance"),
        ("currency_not_held", "creditor", CurrencyNotHeld, "currency_not_held", "AM03", "does not hold this currency"),
    ],
)
def test_each_refusal_is_permanent_with_its_reason(
    core_reason: str, party: str, error_class: type[CoreRefusal], dead_letter_reason: str, iso: str, says: str
) -> None:
    error = refusal(core_reason, party)
    assert type(error) is error_class
    assert (error.retryable, error.reason, error.iso_reason) == (False, dead_letter_reason, iso)
    assert says in str(error)
    assert f"({iso})" in str(error)


def test_a_party_the_core_does_not_name_is_not_guessed() -> None:
    assert "the debtor or creditor account is closed" in str(refusal("account_closed", None))
    assert "the debtor or creditor account is closed" in str(refusal("account_closed", "1234567890"))


def test_a_reason_remit_does_not_know_is_still_permanent() -> None:
    error = refusal("frozen_by_regulator", "debtor")
    assert type(error) is CoreRefusal
    assert (error.retryable, error.reason, error.iso_reason) == (False, "permanent_failure", "MS03")
    assert "frozen_by_regulator" in str(error)


def test_words_of_the_core_never_carry_an_account_number() -> None:
    error = refusal("account 123456789 frozen", "debtor")
    assert not re.search(r"\d{6}", str(error))
    assert quote_core("body.transfers.3.debtor_account: 12345 or 123456 or 9876543210", 200) == (
        "body.transfers.3.debtor_account: 12345 or ****** or **********"
    )
    assert quote_core("x" * 300, 200) == "x" * 200


def test_a_key_held_for_another_transfer_is_permanent() -> None:
    error = key_conflict()
    assert (error.retryable, error.reason) == (False, "core_key_conflict")

"""Which outcome (and so which ISO 20022 reason code) a row rejected at ingress is reported with.

A status report gives one reason per transaction; a row can break several rules, so the first that applies
in this order wins: a duplicate first (told anything else, a customer may send it again and pay twice),
then an account remit cannot pay to, an amount finer than its currency, an amount over the limit. Anything
else is a field the contract refuses (CH16). The sentences matched are remit's own (validation.py,
payment_rules.py, the contract, app/bankfiles/ readers); tests/unit/test_rejection_outcomes.py holds them
to it.
"""

import re

from app.bankfiles.outcomes import Outcome

_RULES = (
    (Outcome.DUPLICATE, re.compile(r"^duplicate payment_reference |was already accepted in an earlier batch")),
    (
        Outcome.INVALID_ACCOUNT,
        re.compile(
            r"(^|; )(debtor|creditor)_(account|bsb): "  # the contract's patterns: wrong digits
            r"|(^|; )(debtor|creditor) (account|agent)"  # pain.001: IBAN, BIC only, other clearing system or scheme
        ),
    ),
    (Outcome.AMOUNT_PRECISION, re.compile(r"has more decimal places than")),
    (Outcome.OVER_LIMIT, re.compile(r" is over the per-payment limit of ")),
)


def rejection_outcome(errors: list[str]) -> Outcome:
    for outcome, pattern in _RULES:
        if any(pattern.search(error) for error in errors):
            return outcome
    return Outcome.INVALID

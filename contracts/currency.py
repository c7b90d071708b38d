"""Active ISO 4217 currency codes, taken from pycountry (the iso-codes project), never hand-typed."""

from functools import cache

import pycountry

# ISO 4217 also lists units that are not money a bank account can hold: precious metals, the SDR,
# bond-market units, the testing code and "no currency". They are refused as payment currencies.
NON_MONETARY_CODES = frozenset(
    {"XAG", "XAU", "XBA", "XBB", "XBC", "XBD", "XDR", "XPD", "XPT", "XSU", "XTS", "XUA", "XXX"}
)


@cache
def active_currency_codes() -> frozenset[str]:
    return frozenset(c.alpha_3 for c in pycountry.currencies) - NON_MONETARY_CODES


def is_active_currency(code: str) -> bool:
    return code in active_currency_codes()

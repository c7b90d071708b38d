"""Decimal amounts as banks write them, converted to integer minor units exactly or not at all."""

import re
from decimal import Decimal
from functools import cache

from iso4217 import Currency

# xs:decimal's lexical form without a sign (the schemas' amounts are >= 0): "12", "12.5", "12.", ".5".
_DECIMAL = re.compile(r"^\+?([0-9]+\.?[0-9]*|\.[0-9]+)$")
_MAX_DIGITS = 18  # the schemas' totalDigits; keeps every sum below inside Decimal's 28-digit precision


class AmountError(ValueError):
    """The amount cannot become minor units: the message says why, for a rejection row."""


def parse_decimal(text: str | None) -> Decimal:
    """An amount as written in the file; AmountError unless it is a plain non-negative decimal."""
    cleaned = (text or "").strip()
    # A string of at most _MAX_DIGITS characters cannot hold more digits: most amounts skip the count.
    if not _DECIMAL.match(cleaned) or (len(cleaned) > _MAX_DIGITS and _value_digits(cleaned) > _MAX_DIGITS):
        raise AmountError(f"amount {cleaned[:24]!r} is not a decimal number of at most {_MAX_DIGITS} digits")
    return Decimal(cleaned)


def _value_digits(cleaned: str) -> int:
    """Digits as XSD's totalDigits counts them, in the value: leading zeros and a fraction's trailing zeros
    are not digits of it ("1000.500" has 5)."""
    integer, _, fraction = cleaned.lstrip("+").partition(".")
    return len((integer + fraction.rstrip("0")).lstrip("0"))


@cache  # a few codes per file, looked up for every row; ISO 4217's table is fixed for the process
def minor_units(code: str) -> int:
    """The number of decimal places of a currency, from ISO 4217 (the iso4217 package's table)."""
    try:
        exponent = Currency(code).exponent
    except ValueError:
        raise AmountError(f"currency {code[:8]!r} is not an ISO 4217 code") from None
    if exponent is None:
        raise AmountError(f"currency {code!r} has no minor unit in ISO 4217: it is not money a payment can move")
    return exponent


def to_minor_units(amount: Decimal, code: str) -> int:
    """The amount in the currency's minor unit (cents for AUD, yen for JPY, fils for KWD), never rounded."""
    exponent = minor_units(code)
    scaled = amount.scaleb(exponent)
    if scaled != scaled.to_integral_value():
        raise AmountError(
            f"amount {amount} {code} has more decimal places than {code}'s {exponent}: refused, never rounded"
        )
    return int(scaled)

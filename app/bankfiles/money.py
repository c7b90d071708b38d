"""Decimal amounts as banks write them, converted to integer minor units exactly or not at all; whole numbers
written in digits, converted only when they have at most MAX_DIGITS digits."""

import re
from decimal import Decimal
from functools import cache

from iso4217 import Currency

# xs:decimal's lexical form without a sign (the schemas' amounts are >= 0): "12", "12.5", "12.", ".5".
_DECIMAL = re.compile(r"^\+?([0-9]+\.?[0-9]*|\.[0-9]+)$")
# The schemas' totalDigits; keeps every sum below inside Decimal's 28-digit precision. Also the most digits any
# number in a bank file may have: an amount in minor units is at most 10^14 (15 digits, the contract's maximum),
# a bigint 19. Counted before a number is converted: int() refuses a string of more than 4,300 digits with a
# ValueError (CPython's limit on a conversion that takes quadratic time), and before that costs milliseconds.
MAX_DIGITS = 18


class AmountError(ValueError):
    """The amount cannot become minor units: the message says why, for a rejection row."""


def parse_decimal(text: str | None) -> Decimal:
    """An amount as written in the file; AmountError unless it is a plain non-negative decimal."""
    cleaned = (text or "").strip()
    # A string of at most MAX_DIGITS characters cannot hold more digits: most amounts skip the count.
    if not _DECIMAL.match(cleaned) or (len(cleaned) > MAX_DIGITS and _value_digits(cleaned) > MAX_DIGITS):
        raise AmountError(f"amount {cleaned[:24]!r} is not a decimal number of at most {MAX_DIGITS} digits")
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


def digit_count(text: str) -> int:
    """Digits of a whole number written in ASCII digits (a sign and leading zeros are not digits of it)."""
    return len(text.lstrip("+-").lstrip("0"))


def whole_number(text: str) -> int | None:
    """`text` as an int when it is ASCII digits (leading zeros allowed) of at most MAX_DIGITS digits; else None.
    The digits are counted before anything is converted."""
    if not (text.isascii() and text.isdigit()) or digit_count(text) > MAX_DIGITS:
        return None
    return int(text)


def too_many_digits(what: str, digits: int) -> str:
    """The reason a row gives for a number it cannot hold (never the number itself)."""
    return f"{what} has {digits} digits; a number in a bank file has at most {MAX_DIGITS}"

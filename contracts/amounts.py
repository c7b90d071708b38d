"""What `amount_cents` is, as people read it: an integer count of the currency's minor unit (cents of AUD, yen of
JPY, which has none smaller, fils of KWD, a thousandth of a dinar), shown in the major unit with the currency's
ISO 4217 exponent beside the stored count. The CLI, the console and the reconciliation report all say it so.

The exponent is ISO 4217's, from the iso4217 package (the table the bank-file readers convert with,
app/bankfiles/money.py); the arithmetic is integer divmod, never a float, so 45,050 cents is 450.50 exactly.
Where ISO 4217 gives a code no exponent (gold, XXX) or the code is not one (a dead letter's unreadable body),
only the minor units are shown, named as such.
"""

from functools import cache

from iso4217 import Currency


@cache  # a few codes per listing, looked up for every row
def exponent(currency: str | None) -> int | None:
    """Decimal places of the currency's major unit (AUD 2, JPY 0, KWD 3); None when ISO 4217 gives none."""
    if not currency:
        return None
    try:
        return Currency(currency).exponent
    except ValueError:
        return None


def major_units(amount: int, currency: str | None) -> str | None:
    """`amount` minor units in the currency's major unit, thousands separated: '450.50' for 45,050 AUD cents,
    '45,050' for 45,050 JPY, '45.050' for 45,050 KWD fils; None when the currency has no exponent."""
    places = exponent(currency)
    if places is None:
        return None
    # int(): a total summed by PostgreSQL arrives as a whole Decimal (numeric), and Decimal has no `d` format.
    whole, fraction = divmod(abs(int(amount)), 10**places)
    sign = "-" if amount < 0 else ""
    return f"{sign}{whole:,}" + (f".{fraction:0{places}d}" if places else "")


def minor_name(currency: str | None) -> str:
    """What the stored integer counts: cents for a currency of two decimal places, minor units otherwise."""
    return "cents" if exponent(currency) == 2 else "minor units"


def amount_text(amount: int | None, currency: str | None) -> str:
    """One amount for a sentence or a fact: '450.50 AUD (45,050 cents)', '45.050 KWD (45,050 minor units)',
    '45,050 JPY' (its major unit is its minor unit), '45,050 XAU (minor units)' without an exponent; '' for
    no amount."""
    if amount is None:
        return ""
    code = currency or "?"
    major = major_units(amount, currency)
    if major is None:
        return f"{amount:,} {code} (minor units)"
    if exponent(currency) == 0:
        return f"{major} {code}"
    return f"{major} {code} ({amount:,} {minor_name(currency)})"


def amount_cell(amount: int | None, currency: str | None) -> str:
    """One amount in a table whose rows name the currency, under a header such as `amount (minor units)`:
    '450.50 (45,050)', '45.050 (45,050)' for KWD, '45,050' for JPY, '(45,050)' without an exponent. The space lets
    a narrow table put the minor units under the amount instead of splitting either."""
    if amount is None:
        return ""
    major = major_units(amount, currency)
    if major is None:
        return f"({amount:,})"
    return major if exponent(currency) == 0 else f"{major} ({amount:,})"

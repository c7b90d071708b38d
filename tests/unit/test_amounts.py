"""Amounts as people read them (contracts/amounts.py): major units by the currency's ISO 4217 exponent, the stored
minor units beside them, integer arithmetic only."""

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contracts.amounts import amount_text, exponent, major_units, minor_name


@pytest.mark.parametrize(("currency", "places"), [("AUD", 2), ("JPY", 0), ("KWD", 3), ("CLF", 4), ("XAU", None),
                                                  ("ZZZ", None), ("aud", None), ("", None), (None, None)])  # fmt: skip
def test_the_exponent_is_iso_4217s(currency: str | None, places: int | None) -> None:
    assert exponent(currency) == places


@pytest.mark.parametrize(
    ("cents", "currency", "shown"),
    [
        (45_050, "AUD", "450.50 AUD (45,050 cents)"),
        (5, "AUD", "0.05 AUD (5 cents)"),
        (100, "AUD", "1.00 AUD (100 cents)"),
        (0, "AUD", "0.00 AUD (0 cents)"),
        (45_050, "JPY", "45,050 JPY"),  # no minor unit: the yen is the unit
        (45_050, "KWD", "45.050 KWD (45,050 minor units)"),  # fils: a thousandth of a dinar
        (7, "KWD", "0.007 KWD (7 minor units)"),
        (1_000, "KWD", "1.000 KWD (1,000 minor units)"),
        (45_050, "XAU", "45,050 XAU (minor units)"),  # ISO 4217 gives gold no exponent
        (45_050, "ZZZ", "45,050 ZZZ (minor units)"),  # not a code (a dead letter's unreadable body)
        (45_050, None, "45,050 ? (minor units)"),
        (-45_050, "AUD", "-450.50 AUD (-45,050 cents)"),  # a difference in a report
        # The contract's largest amount, 10^14 minor units: exact, where a float would already round the cents.
        (100_000_000_000_000, "AUD", "1,000,000,000,000.00 AUD (100,000,000,000,000 cents)"),
        (99_999_999_999_999, "AUD", "999,999,999,999.99 AUD (99,999,999,999,999 cents)"),
        (None, "AUD", ""),
    ],
)
def test_an_amount_reads_in_its_currencys_unit_beside_the_minor_units(
    cents: int | None, currency: str | None, shown: str
) -> None:
    assert amount_text(cents, currency) == shown


def test_a_sum_from_postgresql_a_whole_decimal_reads_the_same() -> None:
    assert major_units(Decimal(45_050), "AUD") == "450.50"  # type: ignore[arg-type]  # what SUM(bigint) returns


def test_minor_units_are_called_cents_only_where_there_are_cents() -> None:
    assert [minor_name(c) for c in ("AUD", "USD", "KWD", "JPY", "XAU")] == ["cents", "cents"] + ["minor units"] * 3


@given(st.integers(min_value=0, max_value=10**18), st.sampled_from(["AUD", "JPY", "KWD", "CLF", "BHD", "USD"]))
def test_the_major_units_are_exactly_the_minor_units_scaled(cents: int, currency: str) -> None:
    places = exponent(currency)
    assert places is not None
    shown = major_units(cents, currency)
    assert shown is not None
    assert Decimal(shown.replace(",", "")) == Decimal(cents).scaleb(-places)
    assert len(shown.partition(".")[2]) == places

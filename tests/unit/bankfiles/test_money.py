"""Amounts become integer minor units exactly, by the currency's ISO 4217 minor unit; never rounded."""

from decimal import Decimal

import pytest

from app.bankfiles.money import AmountError, parse_decimal, to_minor_units, whole_number


@pytest.mark.parametrize(
    ("amount", "currency", "minor"),
    [
        ("10.00", "AUD", 1000),
        ("10", "AUD", 1000),
        ("10.5", "AUD", 1050),
        ("10.500", "AUD", 1050),  # trailing zeros are not a finer fraction
        ("0.01", "AUD", 1),
        ("1234567890123.45", "AUD", 123456789012345),
        ("100", "JPY", 100),
        ("100.0", "JPY", 100),
        ("1.234", "KWD", 1234),
        ("1.2340", "KWD", 1234),
        ("1.2345", "CLF", 12345),  # four decimal places
        ("12.", "AUD", 1200),
        (".5", "AUD", 50),
        ("+7.25", "NZD", 725),
    ],
)
def test_amount_in_minor_units(amount: str, currency: str, minor: int) -> None:
    assert to_minor_units(parse_decimal(amount), currency) == minor


@pytest.mark.parametrize(
    ("amount", "currency"),
    [("10.001", "AUD"), ("10.009", "AUD"), ("0.005", "AUD"), ("100.5", "JPY"), ("1.2345", "KWD"), ("1.23456", "CLF")],
)
def test_a_fraction_finer_than_the_minor_unit_is_refused_not_rounded(amount: str, currency: str) -> None:
    with pytest.raises(AmountError) as refused:
        to_minor_units(parse_decimal(amount), currency)
    assert "never rounded" in str(refused.value)


@pytest.mark.parametrize("currency", ["XAU", "XDR", "XXX"])
def test_a_currency_without_minor_unit_is_refused(currency: str) -> None:
    with pytest.raises(AmountError, match="no minor unit"):
        to_minor_units(Decimal("1"), currency)


@pytest.mark.parametrize("currency", ["ABC", "aud", "", "AUDD"])
def test_an_unknown_currency_is_refused(currency: str) -> None:
    with pytest.raises(AmountError, match="not an ISO 4217 code"):
        to_minor_units(Decimal("1"), currency)


@pytest.mark.parametrize("text", ["", "  ", "-1.00", "1e5", "1E-2", "NaN", "Infinity", "1,00", "1.2.3", "0x10", None])
def test_only_plain_non_negative_decimals_are_amounts(text: str | None) -> None:
    with pytest.raises(AmountError):
        parse_decimal(text)


def test_eighteen_digits_are_an_amount_nineteen_are_not() -> None:
    assert parse_decimal("1234567890123.45678") == Decimal("1234567890123.45678")
    assert parse_decimal("12345678901234567.8") == Decimal("12345678901234567.8")
    with pytest.raises(AmountError):
        parse_decimal("123456789012345678.9")


def test_zeros_that_do_not_change_the_value_do_not_count_as_digits() -> None:
    # xs:decimal's totalDigits counts the value's digits: a CtrlSum written 12345678901234567.80 is valid.
    assert parse_decimal("0012345678901234567.80") == Decimal("12345678901234567.8")
    with pytest.raises(AmountError):
        parse_decimal("0123456789012345678.90")


def test_digits_are_counted_in_the_value_as_the_schema_counts_them() -> None:
    # 19 digits written, 17 in the value (XSD totalDigits): a CtrlSum the schema accepts
    assert parse_decimal("1000000000000.000100") == Decimal("1000000000000.0001")
    assert parse_decimal("000000000000000000001.5") == Decimal("1.5")


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("0", 0),
        ("1500", 1500),
        ("9" * 18, 10**18 - 1),
        ("0" * 100 + "1", 1),  # leading zeros are not digits of the number
        ("1" + "0" * 18, None),  # 19 digits
        ("1" * 5_000, None),  # past int()'s 4,300-digit limit: never converted
        ("-1", None),
        ("+1", None),
        ("1.0", None),
        ("١٢", None),  # Arabic-Indic digits: str.isdigit says yes, a bank file says no
        ("", None),
    ],
)
def test_a_whole_number_has_at_most_18_ascii_digits(text: str, number: int | None) -> None:
    assert whole_number(text) == number


def test_a_decimal_of_5000_digits_is_refused_without_echoing_it() -> None:
    with pytest.raises(AmountError) as refused:
        parse_decimal("1" * 5_000)
    assert str(refused.value) == f"amount '{'1' * 24}' is not a decimal number of at most 18 digits"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1" + "0" * 17, Decimal(10**17)),  # 18 digits
        ("1" + "0" * 18, None),  # 19: trailing zeros of a whole number are digits of it
        ("+" + "9" * 18, Decimal(10**18 - 1)),  # a plus sign is not a digit
        ("+" + "9" * 19, None),
        ("9" * 18 + ".000", Decimal(10**18 - 1)),  # a fraction's trailing zeros are not
    ],
)
def test_the_digits_of_a_long_amount_are_the_digits_of_its_value(text: str, value: Decimal | None) -> None:
    if value is not None:
        assert parse_decimal(text) == value
        return
    with pytest.raises(AmountError, match="is not a decimal number of at most 18 digits"):
        parse_decimal(text)


@pytest.mark.parametrize("text", [None, "", "   "])
def test_a_missing_amount_is_named_as_empty(text: str | None) -> None:
    with pytest.raises(AmountError) as refused:
        parse_decimal(text)
    assert str(refused.value) == "amount '' is not a decimal number of at most 18 digits"

"""Control records of remit's CSV and JSON Lines (app/bankfiles/control_totals.py): what one must be to be read,
and the file's rows held to them at its end, at, just below and just above every total.

Limits written out: a control record's count fits an integer column (2**31 - 1); every number in a bank file has
at most 18 digits (so an amount fits the bigint column)."""

import json
from typing import Any

import pytest

from app.bankfiles.control_totals import DISAGREE, ControlRecords
from app.errors import FileRefused
from app.publisher.bulk_file import ControlTotal
from tests.unit.bankfiles.conftest import Read

HEADER = "payment_reference,amount_cents,currency,debtor_bsb,debtor_account,creditor_bsb,creditor_account"
CONTROL_HEADER = f"{HEADER},record_type,control_count"


def _row(reference: str, cents: str, currency: str = "AUD") -> str:
    return f"{reference},{cents},{currency},062-000,12345678,033-000,87654321,,"


def _control(currency: str, count: str, cents: str) -> str:
    return f",{cents},{currency},,,,,control,{count}"


def _csv(*lines: str) -> bytes:
    return "\n".join([CONTROL_HEADER, *lines, ""]).encode()


# ---------------------------------------------------------------- one control record


@pytest.mark.parametrize(
    ("fields", "readable"),
    [
        ({"currency": "AUD", "control_count": "0", "amount_cents": "0"}, True),
        ({"currency": "AUD", "control_count": str(2**31 - 1), "amount_cents": "9" * 18}, True),
        ({"currency": "AUD", "control_count": str(2**31), "amount_cents": "0"}, False),
        # 2**63 - 1, which the totals' bigint column would hold, has 19 digits: more than a bank file's number has.
        ({"currency": "AUD", "control_count": "0", "amount_cents": str(2**63 - 1)}, False),
        ({"currency": "AUD", "control_count": "0", "amount_cents": "0" * 40 + "1"}, True),
        ({"currency": "AUD", "control_count": "0", "amount_cents": "1" * 5_000}, False),
        ({"currency": "AUD", "control_count": "-1", "amount_cents": "0"}, False),
        ({"currency": "AUD", "control_count": "0", "amount_cents": "-1"}, False),
        ({"currency": "aud", "control_count": "1", "amount_cents": "1"}, False),
        ({"currency": "AUDD", "control_count": "1", "amount_cents": "1"}, False),
        ({"currency": "AUD", "control_count": "one", "amount_cents": "1"}, False),
        ({"currency": "AUD", "control_count": "1", "amount_cents": "1.00"}, False),
        ({"currency": "AUD", "control_count": None, "amount_cents": "1"}, False),
        ({"control_count": "1", "amount_cents": "1"}, False),
        ({"currency": "AUD", "amount_cents": "1"}, False),
        ({"currency": "AUD", "control_count": "1"}, False),
        # JSON Lines values: integers, never a bool, a float or a negative number.
        ({"currency": "AUD", "control_count": 2, "amount_cents": 3000}, True),
        ({"currency": "AUD", "control_count": 0, "amount_cents": 0}, True),
        ({"currency": "AUD", "control_count": True, "amount_cents": 1}, False),
        ({"currency": "AUD", "control_count": 1, "amount_cents": 1.0}, False),
        ({"currency": "AUD", "control_count": 1, "amount_cents": -1}, False),
        ({"currency": 123, "control_count": 1, "amount_cents": 1}, False),
    ],
)
def test_what_a_control_record_must_be_to_be_read(fields: dict[str, Any], readable: bool) -> None:
    records = ControlRecords("f.csv")
    if readable:
        assert records.record(10, {"record_type": "control", **fields}) is True
        total = ControlTotal(fields["currency"], int(fields["control_count"]), int(fields["amount_cents"]))
        assert records.stated == {"AUD": (10, total)}
    else:
        with pytest.raises(FileRefused, match=r"^f\.csv: the control record on line 10 cannot be read \(") as caught:
            records.record(10, {"record_type": "control", **fields})
        assert caught.value.iso_code == "FF01"
        assert str(caught.value).endswith("the file's totals cannot be checked, so nothing of the file was accepted")
        assert "1" * 100 not in str(caught.value)  # a long number is named by its digit count, never its digits


def test_a_number_too_long_is_named_by_its_digits() -> None:
    records = ControlRecords("f.csv")
    with pytest.raises(FileRefused, match="amount_cents has 19 digits; a number in a bank file has at most 18"):
        records.record(3, {"record_type": "control", "currency": "AUD", "control_count": "1", "amount_cents": "1" * 19})


NEEDS = "a control record needs currency (3 capital letters), control_count and amount_cents (whole numbers)"


@pytest.mark.parametrize(
    ("count", "cents", "reason"),
    [
        ("1" * 19, "1", "control_count has 19 digits; a number in a bank file has at most 18"),
        ("1", "1" * 19, "amount_cents has 19 digits; a number in a bank file has at most 18"),
        ("one", "1", NEEDS),
        ("x" * 20, "1", NEEDS),  # as long as a number too long, but no number: named as not one
        ("-" + "1" * 19, "1", NEEDS),  # a sign is not a digit: negative, not too long
        ("1", "1.5" + "0" * 17, NEEDS),
    ],
)
def test_why_a_control_record_cannot_be_read(count: str, cents: str, reason: str) -> None:
    fields = {"record_type": "control", "currency": "AUD", "control_count": count, "amount_cents": cents}
    with pytest.raises(FileRefused) as caught:
        ControlRecords("f.csv").record(10, fields)
    assert str(caught.value) == (
        f"f.csv: the control record on line 10 cannot be read ({reason}); "
        "the file's totals cannot be checked, so nothing of the file was accepted"
    )


def test_a_row_that_is_not_a_control_record_is_a_payment_row_or_validations_to_reject() -> None:
    records = ControlRecords("f.csv")
    assert records.record(2, {"currency": "AUD", "amount_cents": "5"}) is False
    assert records.record(3, {"record_type": "payment", "currency": "AUD", "amount_cents": "5"}) is False
    assert records.record(4, {"record_type": "footer", "currency": "AUD", "amount_cents": "5"}) is False
    records.record(5, {"record_type": "control", "currency": "AUD", "control_count": "2", "amount_cents": "10"})
    assert records.facts().controls == (ControlTotal("AUD", 2, 10),)  # the footer counts as no payment


# ---------------------------------------------------------------- the file held to them, in the reader


def test_no_control_record_states_nothing(read: Read) -> None:
    rows, summary = read(_csv(_row("P-1", "1500")), "csv")
    assert [r.number for r in rows] == [2]
    assert (summary.controls, summary.stated_count) == ((), None)


def test_control_records_are_the_files_totals_not_rows(read: Read) -> None:
    text = _csv(_row("P-1", "1000"), _control("USD", "1", "7"), _row("P-2", "2000"), _row("U-1", "7", "USD"))
    text += _control("AUD", "2", "3000").encode() + b"\n"
    rows, summary = read(text, "csv")
    assert [r.number for r in rows] == [2, 4, 5]  # rows after a control record are read too
    assert summary.controls == (ControlTotal("AUD", 2, 3000), ControlTotal("USD", 1, 7))
    assert summary.stated_count == 3


@pytest.mark.parametrize(
    ("count", "cents", "code"),
    [("1", "3000", "AM18"), ("3", "3000", "AM18"), ("2", "2999", "AM10"), ("2", "3001", "AM10")],
)
def test_a_total_one_off_refuses_the_file(read: Read, count: str, cents: str, code: str) -> None:
    text = _csv(_row("P-1", "1000"), _row("P-2", "2000"), _control("AUD", count, cents))
    with pytest.raises(FileRefused) as caught:
        read(text, "csv", name="b.csv")
    assert str(caught.value) == (
        f"b.csv: {DISAGREE}: the control record on line 4 says {count} AUD payments of {cents} cents; "
        "the file has 2 AUD payments of 3000 cents"
    )
    assert caught.value.iso_code == code


def test_a_rejected_row_counts_with_the_amount_it_has(read: Read) -> None:
    """As an ABA line: every payment row of the currency counts; an amount that cannot be read adds nothing."""
    text = _csv(_row("P-1", "1000"), _row("P-2", "12.50"), _control("AUD", "2", "1000"))
    rows, summary = read(text, "csv")
    assert len(rows) == 2
    assert summary.controls == (ControlTotal("AUD", 2, 1000),)


def test_a_json_amount_that_is_not_an_integer_counts_as_a_payment_of_no_cents(read: Read) -> None:
    """true is 1 to Python and 10.5 a number, but neither is an amount in cents: the rows count, their amounts
    add nothing (validation rejects both rows)."""
    lines = [
        {"payment_reference": "P-1", "amount_cents": 1000, "currency": "AUD"},
        {"payment_reference": "P-2", "amount_cents": True, "currency": "AUD"},
        {"payment_reference": "P-3", "amount_cents": 10.5, "currency": "AUD"},
        {"record_type": "control", "currency": "AUD", "control_count": 3, "amount_cents": 1000},
    ]
    rows, summary = read("".join(json.dumps(line) + "\n" for line in lines).encode(), "jsonl")
    assert [r.number for r in rows] == [1, 2, 3]
    assert summary.controls == (ControlTotal("AUD", 3, 1000),)


def test_every_currency_of_the_rows_needs_its_control_record(read: Read) -> None:
    text = _csv(_row("P-1", "1000"), _row("U-1", "7", "USD"), _control("AUD", "1", "1000"))
    with pytest.raises(FileRefused) as caught:
        read(text, "csv", name="b.csv")
    assert str(caught.value) == (
        f"b.csv: {DISAGREE}: the file states no control record for USD; it has 1 USD payments of 7 cents"
    )
    assert caught.value.iso_code == "AM18"  # a count the file does not state is a wrong count


def test_a_control_record_for_a_currency_without_rows_says_zero(read: Read) -> None:
    text = _csv(_row("P-1", "1000"), _control("AUD", "1", "1000"), _control("NZD", "1", "5"))
    with pytest.raises(FileRefused, match="line 4 says 1 NZD payments of 5 cents; the file has 0 NZD payments of 0"):
        read(text, "csv")
    _, summary = read(_csv(_row("P-1", "1000"), _control("AUD", "1", "1000"), _control("NZD", "0", "0")), "csv")
    assert summary.controls == (ControlTotal("AUD", 1, 1000), ControlTotal("NZD", 0, 0))


def test_one_control_record_per_currency(read: Read) -> None:
    text = _csv(_row("P-1", "1000"), _control("AUD", "1", "1000"), _control("AUD", "1", "1000"))
    with pytest.raises(FileRefused) as caught:
        read(text, "csv", name="b.csv")
    assert str(caught.value) == (
        "b.csv: the control records on lines 3 and 4 both state AUD totals; "
        "the file's totals cannot be checked, so nothing of the file was accepted"
    )


def test_json_lines_control_records_read_the_same(read: Read) -> None:
    def line(value: dict[str, Any]) -> str:
        return json.dumps(value) + "\n"

    payment = {"payment_reference": "P-1", "amount_cents": 1000, "currency": "AUD"}
    control = {"record_type": "control", "currency": "AUD", "control_count": 1, "amount_cents": 1000}
    rows, summary = read((line(payment) + line(control)).encode(), "jsonl")
    assert [r.number for r in rows] == [1]
    assert summary.controls == (ControlTotal("AUD", 1, 1000),)
    lying = line(payment) + line({**control, "control_count": 5, "amount_cents": 9999})
    with pytest.raises(FileRefused) as caught:
        read(lying.encode(), "jsonl", name="w.jsonl")
    assert str(caught.value) == (
        f"w.jsonl: {DISAGREE}: the control record on line 2 says 5 AUD payments of 9999 cents; "
        "the file has 1 AUD payments of 1000 cents"
    )
    huge = line(payment) + '{"record_type": "control", "currency": "AUD", "control_count": 1' + "9" * 18 + "}\n"
    with pytest.raises(FileRefused, match=r"line 2 cannot be read \(control_count has 19 digits"):
        read(huge.encode(), "jsonl")

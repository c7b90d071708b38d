"""remit's CSV and JSON Lines read as streams give the rows the whole-file reader gives, line numbers included."""

from pathlib import Path

import pytest

from app.bankfiles import BankFile
from app.bankfiles.rows import PARSE_ERROR
from app.bankfiles.streams import MAX_LINE_BYTES
from app.errors import FileRefused
from tests.unit.bankfiles.conftest import Read
from tests.utils.whole_file_reader import read_bulk_file

EXAMPLES = Path(__file__).parents[3] / "examples"
HEADER = "payment_reference,amount_cents,currency,debtor_bsb,debtor_account,creditor_bsb,creditor_account"
ROW = "P-1,1500,AUD,062-000,12345678,033-000,87654321"


@pytest.mark.parametrize("name", ["anz_20250501.csv", "westpac_20250501.jsonl"])
def test_the_examples_read_as_the_whole_file_reader_reads_them(name: str) -> None:
    expected = read_bulk_file(EXAMPLES / name)
    with BankFile(EXAMPLES / name) as bank:
        rows = list(bank.rows())
        summary = bank.summary
    assert [(r.number, r.fields, r.typed) for r in rows] == [(r.number, r.fields, r.typed) for r in expected.rows]
    assert summary.sha256 == expected.sha256
    assert summary.identity == expected.sha256


@pytest.mark.parametrize(
    "text",
    [
        f"{HEADER}\n{ROW}\n",
        f"{HEADER}\r\n{ROW}\r\n",
        f"\ufeff{HEADER}\r\n{ROW}",
        f"{HEADER}\n\n{ROW}\n,,,,,,\n",
    ],
)
def test_csv_line_ends_bom_and_blank_rows(read: Read, text: str) -> None:
    rows, _ = read(text.encode())
    assert [r.fields["payment_reference"] for r in rows] == ["P-1"]


def test_a_quoted_csv_cell_may_span_lines_and_keeps_the_line_count(read: Read) -> None:
    rows, _ = read(f'{HEADER}\n"P-1",1500,AUD,062-000,12345678,033-000,"8765\n4321"\n{ROW}\n'.encode())
    assert [r.number for r in rows] == [3, 4]


def test_a_line_that_is_not_json_is_a_rejected_row_with_its_number(read: Read) -> None:
    rows, _ = read(
        b'{"payment_reference": "P-1"}\r\n{"payment_reference": \r\n\r\n[1, 2]\n{"payment_reference": "P-2"}'
    )
    assert [r.number for r in rows] == [1, 2, 4, 5]
    assert [PARSE_ERROR in r.fields for r in rows] == [False, True, True, False]
    assert rows[2].fields[PARSE_ERROR] == "each line must be a JSON object"


@pytest.mark.parametrize(("fmt", "prefix"), [("csv", f"{HEADER}\n"), ("jsonl", "")])
def test_a_line_longer_than_the_limit_refuses_the_file(read: Read, fmt: str, prefix: str) -> None:
    at_limit = prefix + '{"payment_reference": "' + "x" * (MAX_LINE_BYTES - 26) + '"}\n'
    assert len(at_limit.splitlines(keepends=True)[-1]) == MAX_LINE_BYTES
    read(at_limit.encode(), fmt)
    over = prefix + "y" * (MAX_LINE_BYTES + 1)
    with pytest.raises(FileRefused, match=f"line {prefix.count(chr(10)) + 1} is longer than {MAX_LINE_BYTES}"):
        read(over.encode(), fmt)


@pytest.mark.parametrize(("fmt", "prefix"), [("csv", f"{HEADER}\n{ROW}\n"), ("jsonl", '{"a": 1}\n')])
def test_bytes_that_are_not_utf8_refuse_the_file_with_the_line(read: Read, fmt: str, prefix: str) -> None:
    with pytest.raises(FileRefused, match=f"not utf-8 text .line {prefix.count(chr(10)) + 1}."):
        read(prefix.encode() + b'{"payment_reference": "Caf\xe9"}\n', fmt)


def test_a_quoted_cell_longer_than_the_csv_field_limit_refuses_the_file(read: Read) -> None:
    cell = "\n".join(["z" * 60_000] * 3)  # each line under the line limit, the cell over csv's 131,072
    with pytest.raises(FileRefused, match="line 5 is not valid CSV: field larger than field limit"):
        read(f'{HEADER}\n{ROW}\nP-2,"{cell}"\n'.encode(), "csv")


def test_a_json_number_of_more_than_18_digits_is_counted_never_converted(read: Read) -> None:
    """int() refuses more than 4,300 digits with a ValueError (it was a 500); the row says which field."""
    rows, _ = read(
        b'{"payment_reference": "P-1", "amount_cents": ' + b"7" * 5_000 + b"}\n"
        b'{"payment_reference": "P-2", "amount_cents": -' + b"9" * 19 + b', "currency": "AUD"}\n'
        b'{"payment_reference": "P-3", "amount_cents": ' + b"9" * 18 + b"}\n"
        b'{"payment_reference": "P-4", "amount_cents": [' + b"9" * 19 + b"]}\n"
    )
    huge, negative, at_bound, nested = (r.fields for r in rows)
    assert huge == {
        "payment_reference": "P-1",
        PARSE_ERROR: "amount_cents has 5000 digits; a number in a bank file has at most 18",
    }
    assert negative[PARSE_ERROR] == "amount_cents has 19 digits; a number in a bank file has at most 18"
    assert (negative["payment_reference"], negative["currency"], "amount_cents" in negative) == ("P-2", "AUD", False)
    assert at_bound == {"payment_reference": "P-3", "amount_cents": 999_999_999_999_999_999}
    assert PARSE_ERROR not in nested  # not an amount at all: the contract refuses the list, whose number stays unread
    assert repr(nested["amount_cents"]) == "[<a number of 19 digits>]"


def test_csv_cells_are_trimmed_and_blank_cells_left_out(read: Read) -> None:
    header = f"{HEADER},record_type,control_count"
    rows, _ = read(f"{header}\n P-1 , 1500 ,AUD ,062-000,12345678,033-000,87654321,,\n".encode(), "csv")
    assert [(r.number, r.fields, r.typed) for r in rows] == [
        (
            2,
            {
                "payment_reference": "P-1",
                "amount_cents": "1500",
                "currency": "AUD",
                "debtor_bsb": "062-000",
                "debtor_account": "12345678",
                "creditor_bsb": "033-000",
                "creditor_account": "87654321",
            },
            False,
        )
    ]


COLUMNS = (
    "The columns are: payment_reference, amount_cents, currency, debtor_bsb, debtor_account, creditor_bsb, "
    "creditor_account (and, for control records, record_type and control_count)"
)


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        (HEADER.replace(",currency", ""), "missing currency"),
        (f"{HEADER},fee_cents", "unexpected fee_cents"),
        (f"{HEADER.replace(',currency', ',ccy')},fee_cents", "missing currency; unexpected ccy, fee_cents"),
        (HEADER.replace(",currency,debtor_bsb", ""), "missing currency, debtor_bsb"),
    ],
)
def test_a_wrong_csv_header_refuses_the_file_naming_each_column(read: Read, header: str, problem: str) -> None:
    with pytest.raises(FileRefused) as caught:
        read(f"{header}\n{ROW}\n".encode(), "csv", name="a.csv")
    assert str(caught.value) == f"a.csv: the CSV header is wrong: {problem}. {COLUMNS}"


def test_a_csv_header_with_the_control_columns_is_right(read: Read) -> None:
    rows, _ = read(f"{HEADER},control_count,record_type\n{ROW},,\n".encode(), "csv")
    assert [r.number for r in rows] == [2]


def test_a_json_row_names_each_number_it_cannot_hold(read: Read) -> None:
    key = "k" * 70  # a row's own key, named by its first 64 characters only
    rows, _ = read(
        b'{"payment_reference": "P-1", "amount_cents": ' + b"1" * 19 + b', "' + key.encode() + b'": ' + b"2" * 20 + b"}"
    )
    assert rows[0].fields == {
        "payment_reference": "P-1",
        PARSE_ERROR: "amount_cents has 19 digits; a number in a bank file has at most 18; "
        f"{'k' * 64} has 20 digits; a number in a bank file has at most 18",
    }


def test_a_json_line_nested_past_the_parsers_depth_is_a_rejected_row(read: Read) -> None:
    rows, _ = read(b'{"payment_reference": "P-1"}\n{"a": ' + b"[" * 5_000 + b"]" * 5_000 + b"}\n", "jsonl")
    assert [(r.number, r.fields.get(PARSE_ERROR)) for r in rows] == [
        (1, None),
        (2, "not valid JSON: nested too deeply"),
    ]


@pytest.mark.parametrize(("fmt", "text"), [("csv", f"{HEADER}\n{ROW}\n"), ("jsonl", '{"a": 1}\n')])
def test_a_refused_text_file_is_named(read: Read, fmt: str, text: str) -> None:
    with pytest.raises(FileRefused) as caught:
        read(text.encode() + b"\xe9\n", fmt, name="pay.txt")
    assert str(caught.value) == f"pay.txt is not utf-8 text (line {text.count(chr(10)) + 1}); save it as UTF-8"

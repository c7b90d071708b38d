"""BankFile (app/bankfiles/reader.py): what it says of a file once read (its name, its rows counted, rejected ones
included), read once, its summary only at the end, and files it cannot open or read named in the refusal."""

from pathlib import Path

import pytest

from app.bankfiles import BankFile
from app.bankfiles.formats import SNIFF_BYTES
from app.bankfiles.rows import PARSE_ERROR
from app.errors import FileRefused, UsageError
from tests.unit.bankfiles.conftest import Read
from tests.utils.bankfile_writers import AbaDetail, AbaFile

HEADER = b"payment_reference,amount_cents,currency,debtor_bsb,debtor_account,creditor_bsb,creditor_account\n"


def test_the_summary_counts_every_row_rejected_ones_included(read: Read) -> None:
    credit = AbaDetail("062-000", "12345678", 100, "P-1")
    debit = AbaDetail("033-000", "87654321", 100, "BALANCE", code="13")
    rows, summary = read(AbaFile([credit, debit, credit]).text().encode(), name="pay.aba")
    assert [PARSE_ERROR in r.fields for r in rows] == [False, True, False]
    assert (summary.name, summary.rows) == ("pay.aba", 3)
    _, empty = read(HEADER, "csv", name="empty.csv")
    assert (empty.name, empty.rows) == ("empty.csv", 0)


def test_rows_are_read_once_and_the_summary_known_after(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_bytes(HEADER + b"P-1,100,AUD,062-000,12345678,033-000,87654321\n")
    with BankFile(path) as bank:
        with pytest.raises(RuntimeError) as early:
            _ = bank.summary
        assert str(early.value) == "a bank file's summary is known once all its rows have been read"
        assert len(list(bank.rows())) == 1
        with pytest.raises(RuntimeError) as again:
            next(bank.rows())
        assert str(again.value) == "a bank file's rows can be read once"
        assert bank.summary.rows == 1


def test_a_file_that_cannot_be_opened_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "missing.csv"
    with pytest.raises(UsageError) as caught:
        BankFile(missing)
    assert str(caught.value) == f"cannot read {missing}: No such file or directory. Check the path and permissions."


@pytest.mark.parametrize(
    ("data", "bank_format", "message"),
    [
        (b"", "csv", "x.dat is empty"),  # an override is still checked
        (
            b"hello world\n",
            None,
            "cannot tell the format of x.dat from its content: remit reads csv, jsonl, pain.001.001.09, "
            "pain.001.001.03, aba. Name the format explicitly if the file is one of them.",
        ),
    ],
)
def test_a_file_no_reader_takes_is_named(read: Read, data: bytes, bank_format: str | None, message: str) -> None:
    with pytest.raises(FileRefused) as caught:
        read(data, bank_format, name="x.dat")
    assert str(caught.value) == message


def test_only_the_first_bytes_are_sniffed(read: Read) -> None:
    """A NUL past the first SNIFF_BYTES is the row's to answer for (a line that is not JSON), not the file's."""
    line = b'{"payment_reference": "P-1", "amount_cents": 100}\n'
    data = line * (SNIFF_BYTES // len(line) + 1) + b'{"payment_reference": "P-\x00"}\n'
    rows, _ = read(data)
    assert PARSE_ERROR not in rows[0].fields
    assert str(rows[-1].fields[PARSE_ERROR]).startswith("not valid JSON: Invalid control character")

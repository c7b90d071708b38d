"""The format of a file is told by its content, never its name; an override names it; unknown ones are explained."""

import pytest

from app.bankfiles import BankFormat, detect_format, parse_format
from app.errors import FileRefused, UsageError
from tests.unit.bankfiles.conftest import Read
from tests.utils.bankfile_writers import PAIN_001_03, PAIN_001_09, AbaDetail, AbaFile, Tx, pain001

FORMATS_SENTENCE = "csv, jsonl, pain.001.001.09, pain.001.001.03, aba"
CSV = b"payment_reference,amount_cents,currency,debtor_bsb,debtor_account,creditor_bsb,creditor_account\n"
JSONL = b'{"payment_reference": "P-1", "amount_cents": 100}\n'
ABA = AbaFile([AbaDetail("062-000", "12345678", 100, "P-1")]).text().encode()


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (CSV, BankFormat.CSV),
        (JSONL, BankFormat.JSONL),
        (b"\n\n  " + JSONL, BankFormat.JSONL),
        (pain001(PAIN_001_09, [Tx("E-1", "1.00")]), BankFormat.PAIN_001_09),
        (pain001(PAIN_001_03, [Tx("E-1", "1.00")]), BankFormat.PAIN_001_03),
        (ABA, BankFormat.ABA),
        (b"\xef\xbb\xbf" + CSV, BankFormat.CSV),
        (b"\xef\xbb\xbf" + ABA, BankFormat.ABA),
    ],
)
def test_each_format_is_told_by_its_content(head: bytes, expected: BankFormat) -> None:
    assert detect_format(head, "upload") is expected


@pytest.mark.parametrize(("name", "content"), [("payments.csv", ABA), ("payments.xml", CSV), ("payments.aba", JSONL)])
def test_the_file_name_does_not_decide(read: Read, name: str, content: bytes) -> None:
    _, summary = read(content, name=name)
    assert summary.format == detect_format(content, name).value
    assert summary.format != name.rsplit(".", 1)[1]


def test_an_override_reads_the_file_as_the_named_format(read: Read) -> None:
    # A one-column CSV has no comma: its content says nothing, the override says CSV (whose reader then
    # refuses a header that lacks remit's other columns).
    with pytest.raises(FileRefused, match="the CSV header is wrong: missing amount_cents, currency"):
        read(b"payment_reference\nP-1\n", "csv")


@pytest.mark.parametrize("name", ["CSV", " aba ", "pain.001.001.09"])
def test_override_names_are_the_format_names(name: str) -> None:
    assert parse_format(name).value == name.strip().lower()


@pytest.mark.parametrize("name", ["xml", "pain.001", "pain.001.001.02", "cemtex", ""])
def test_an_unknown_format_name_lists_the_formats_remit_reads(name: str) -> None:
    with pytest.raises(UsageError) as refused:
        parse_format(name)
    assert FORMATS_SENTENCE in str(refused.value)


def test_content_of_no_known_format_is_refused_with_the_formats_remit_reads() -> None:
    with pytest.raises(FileRefused) as refused:
        detect_format(b"hello world\nthis is a letter\n", "letter.txt")
    assert FORMATS_SENTENCE in str(refused.value)
    assert "letter.txt" in str(refused.value)


def test_xml_of_another_message_is_refused_naming_it() -> None:
    other = b'<?xml version="1.0"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:pacs.008.001.08"/>'
    with pytest.raises(FileRefused) as refused:
        detect_format(other, "pacs.xml")
    assert "pacs.008.001.08" in str(refused.value)
    assert "pain.001.001.09" in str(refused.value)


@pytest.mark.parametrize(
    ("head", "words"),
    [
        (b"", "empty"),
        (b"  \r\n\t\n", "empty"),
        (b"\xef\xbb\xbf", "empty"),
        ("payment_reference,amount_cents\n".encode("utf-16"), "UTF-16"),
        (b"\xfe\xff" + "payment_reference,amount_cents\n".encode("utf-16-be"), "UTF-16"),
        ("payment_reference\n".encode("utf-32"), "UTF-32"),
        (b"PK\x03\x04\x14\x00\x00\x00", "ZIP"),
        (b"\x1f\x8b\x08\x00", "gzip"),
        (b"payment_reference,amount\x00cents\n", "binary"),
    ],
)
def test_what_no_reader_can_take_is_refused_with_why(read: Read, head: bytes, words: str) -> None:
    for override in (None, "csv"):  # an override does not let them through either
        with pytest.raises(FileRefused) as refused:
            read(head, override)
        assert words in str(refused.value)

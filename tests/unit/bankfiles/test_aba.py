"""ABA direct-entry files: each detail record a row, credits only, malformed lines rejected one by one, the file
total record checked against the detail records (a wrong one refuses the file)."""

import pytest

from app.bankfiles.aba import payment_reference
from app.bankfiles.control_totals import DISAGREE
from app.bankfiles.rows import PARSE_ERROR
from app.bankfiles.streams import MAX_LINE_BYTES
from app.errors import FileRefused
from app.publisher.bulk_file import ControlTotal
from tests.unit.bankfiles.conftest import Read
from tests.utils.bankfile_writers import AbaDetail, AbaFile

PAY = AbaDetail("062-000", "12345678", 150025, "INV 10042", code="53", trace_bsb="033-000", trace_account="87654321")


def aba(*details: AbaDetail, **total: int) -> bytes:
    return AbaFile(list(details)).text(**total).encode()


def test_a_credit_becomes_the_contracts_payment_fields(read: Read) -> None:
    rows, summary = read(aba(PAY))
    assert [(r.number, r.fields) for r in rows] == [
        (
            2,
            {
                "payment_reference": "INV_10042",
                "amount_cents": 150025,
                "currency": "AUD",
                "creditor_bsb": "062-000",
                "creditor_account": "12345678",
                "debtor_bsb": "033-000",
                "debtor_account": "87654321",
            },
        )
    ]
    assert summary.format == "aba"
    assert summary.identity == summary.sha256
    assert summary.stated_count == 1
    assert summary.controls == (ControlTotal("AUD", 1, 150025),)


@pytest.mark.parametrize("code", ["50", "51", "52", "53", "54", "55", "56", "57"])
def test_every_credit_code_is_a_payment(read: Read, code: str) -> None:
    rows, _ = read(aba(AbaDetail("062-000", "12345678", 100, "REF-1", code=code)))
    assert PARSE_ERROR not in rows[0].fields


@pytest.mark.parametrize(
    ("code", "reason"), [("13", "is a debit"), ("49", "neither a credit"), ("58", "neither a credit")]
)
def test_other_transaction_codes_are_rejected_rows(read: Read, code: str, reason: str) -> None:
    debit_or_other = AbaDetail("062-000", "12345678", 100, "BALANCE", code=code)
    rows, _ = read(aba(PAY, debit_or_other))
    assert PARSE_ERROR not in rows[0].fields
    assert reason in rows[1].fields[PARSE_ERROR]


def test_a_self_balancing_debit_is_counted_in_the_totals_and_rejected(read: Read) -> None:
    balance = AbaDetail("033-000", "87654321", PAY.amount_cents, "BALANCE", code="13")
    rows, summary = read(aba(PAY, balance))
    assert len(rows) == 2
    assert summary.controls == (ControlTotal("AUD", 1, 150025),)  # what remit is asked to pay: the credits


def _with(record: str, position: int, text: str) -> str:
    return record[: position - 1] + text + record[position - 1 + len(text) :]


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda r: r[:119], "119 characters long"),
        (lambda r: r + " ", "121 characters long"),
        (lambda r: _with(r, 18, "Z"), "indicator (position 18)"),
        (lambda r: _with(r, 113, "00000X00"), "withholding tax (positions 113-120)"),
        (lambda r: _with(r, 63, " " * 18), "lodgement reference (positions 63-80) is blank"),
        (lambda r: _with(r, 63, "INV#42            "), "cannot be a payment_reference"),
        (lambda r: _with(r, 63, "-INV              "), "cannot be a payment_reference"),
        (lambda r: _with(r, 40, "\u00e9"), "non-ASCII"),
    ],
)
def test_a_malformed_detail_line_is_rejected_with_its_line_number_and_the_others_accepted(
    read: Read, damage: object, reason: str
) -> None:
    good = AbaDetail("062-000", "12345678", 100, "REF-1")
    bad = AbaDetail("062-000", "12345678", 200, "REF-2")
    lines = AbaFile([good, bad, good]).text().split("\r\n")
    lines[2] = damage(lines[2])  # type: ignore[operator]
    rows, _ = read("\r\n".join(lines).encode("latin-1"))
    assert [r.number for r in rows] == [2, 3, 4]
    assert PARSE_ERROR not in rows[0].fields
    assert reason in rows[1].fields[PARSE_ERROR]
    assert PARSE_ERROR not in rows[2].fields


def test_an_unreadable_amount_is_a_rejected_row_and_then_the_totals_cannot_match(read: Read) -> None:
    lines = AbaFile([PAY]).text().split("\r\n")
    lines[1] = _with(lines[1], 21, "00001500.0")
    with pytest.raises(FileRefused) as caught:
        read("\r\n".join(lines).encode())
    assert caught.value.iso_code == "AM10"


def test_an_unknown_record_type_is_a_rejected_row(read: Read) -> None:
    lines = AbaFile([PAY]).text().split("\r\n")
    lines.insert(2, "2" + " " * 119)
    rows, _ = read("\r\n".join(lines).encode())
    assert "record type '2'" in rows[1].fields[PARSE_ERROR]


@pytest.mark.parametrize(("count", "refused"), [(1, True), (2, False), (3, True)])
def test_the_file_total_count_must_match(read: Read, count: int, refused: bool) -> None:
    data = aba(PAY, PAY, count=count)
    if not refused:
        assert len(read(data)[0]) == 2
        return
    with pytest.raises(FileRefused) as caught:
        read(data)
    assert f"says {count} detail records" in str(caught.value)
    assert "the file has 2 detail records" in str(caught.value)
    assert caught.value.iso_code == "AM18"


@pytest.mark.parametrize(("credits", "refused"), [(300049, True), (300050, False), (300051, True)])
def test_the_file_total_credits_must_match(read: Read, credits: int, refused: bool) -> None:
    data = aba(PAY, PAY, credits=credits)
    if not refused:
        assert len(read(data)[0]) == 2
        return
    with pytest.raises(FileRefused) as caught:
        read(data)
    assert f"credits {credits}" in str(caught.value)
    assert "credits 300050" in str(caught.value)
    assert caught.value.iso_code == "AM10"


def test_the_file_total_debits_must_match(read: Read) -> None:
    with pytest.raises(FileRefused, match="debits 1"):
        read(aba(PAY, debits=1))


def test_a_net_total_that_is_not_credits_minus_debits_is_refused(read: Read) -> None:
    lines = AbaFile([PAY]).text().split("\r\n")
    lines[2] = _with(lines[2], 21, "0000000001")
    with pytest.raises(FileRefused, match="net total 1"):
        read("\r\n".join(lines).encode())


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda lines: lines[:2], "no file total record"),  # truncated: the trailer is gone
        (lambda lines: lines[:1], "no file total record"),
        (lambda lines: [*lines[:3], lines[1]], "comes after the file total record"),
        (lambda lines: lines[1:], "starts with type 0"),
        (lambda lines: [lines[0], *lines], "second descriptive record"),
        (lambda lines: [lines[0][:119], *lines[1:]], "descriptive record (line 1) must be 120"),
        (lambda lines: [lines[0][:74] + "310225" + lines[0][80:], *lines[1:]], "not DDMMYY"),
        (lambda lines: [*lines[:2], lines[2][:100]], "file total record (line 3) must be 120"),
        (lambda lines: [*lines[:2], "7000-000" + lines[2][8:]], "999-999"),
        (lambda lines: [*lines[:2], lines[2][:25] + "ABCDE" + lines[2][30:]], "not digits"),
    ],
)
def test_a_wrong_structure_refuses_the_file(read: Read, edit: object, words: str) -> None:
    lines = AbaFile([PAY]).text().split("\r\n")[:3]
    data = "\r\n".join(edit(lines)) + "\r\n"  # type: ignore[operator]
    with pytest.raises(FileRefused) as caught:
        read(data.encode(), "aba")
    assert words in str(caught.value)


@pytest.mark.parametrize(
    ("transform", "name"),
    [
        (lambda t: t, "CRLF line ends"),
        (lambda t: t.replace("\r\n", "\n"), "LF line ends"),
        (lambda t: t.rstrip("\r\n"), "no final line end"),
        (lambda t: "\ufeff" + t, "a UTF-8 byte order mark"),
        (lambda t: t + "\r\n\r\n", "blank lines after the file total"),
    ],
)
def test_line_ends_and_a_bom_do_not_change_the_rows(read: Read, transform: object, name: str) -> None:
    text = AbaFile([PAY, PAY]).text()
    rows, _ = read(transform(text).encode())  # type: ignore[operator]
    assert [r.fields["payment_reference"] for r in rows] == ["INV_10042", "INV_10042"], name


@pytest.mark.parametrize(
    ("lodgement", "reference"),
    [("INV 10042", "INV_10042"), ("  PAYROLL  MAY 25 ", "PAYROLL_MAY_25"), ("A/B.C-D_E", "A/B.C-D_E"), ("", "")],
)
def test_a_lodgement_reference_becomes_a_payment_reference(lodgement: str, reference: str) -> None:
    assert payment_reference(lodgement) == reference


# ---------------------------------------------------------------- at the edges (what mutation testing asked for)


def test_every_reason_a_detail_line_gives_in_full(read: Read) -> None:
    """Each reason as the rejection shows it; a line with two faults gives both, in order."""
    good = AbaDetail("062-000", "12345678", 100, "REF-1").record()
    lines = [
        _with(good, 40, "\u00e9"),
        _with(good, 63, "INV#42            "),
        _with(_with(good, 18, "Q"), 113, "0000000X"),
        AbaDetail("033-000", "87654321", 100, "BALANCE", code="13").record(),
        "2" + " " * 119,
    ]
    text = AbaFile().descriptive() + "\r\n" + "".join(line + "\r\n" for line in lines)
    text += AbaFile([AbaDetail("062-000", "1", 100, "X")] * 4).file_total(count=4, credits=300, debits=100)
    rows, _ = read(text.encode("latin-1"), "aba")
    assert [(r.number, r.fields[PARSE_ERROR]) for r in rows] == [
        (2, "the record has non-ASCII characters; ABA records are ASCII"),
        (
            3,
            "the lodgement reference (positions 63-80) cannot be a payment_reference: it must start with a letter "
            "or digit and hold only letters, digits, blanks, '_', '.', '/' and '-'",
        ),
        (
            4,
            "the indicator (position 18) must be blank, N, W, X or Y, not 'Q'; "
            "the withholding tax (positions 113-120) must be digits",
        ),
        (5, "transaction code 13 is a debit (such as a self-balancing record): remit makes credits only"),
        (6, "record type '2' is not 0, 1 or 7"),
    ]


def test_zero_cent_records_add_nothing_and_every_credit_and_debit_counts(read: Read) -> None:
    """A credit and a debit of 0 cents, two debits: the totals are sums (0 adds 0), the credits counted one by one.
    The file states 5 records, credits 150025, debits 300; remit is asked to pay 2 credits of 150025 cents."""
    zero_credit = AbaDetail("062-000", "12345678", 0, "ZERO", code="50")
    zero_debit = AbaDetail("033-000", "87654321", 0, "ZERO-DEBIT", code="13")
    debits = [AbaDetail("033-000", "87654321", cents, f"D-{cents}", code="13") for cents in (100, 200)]
    rows, summary = read(aba(PAY, zero_credit, zero_debit, *debits))
    assert len(rows) == 5
    assert summary.stated_count == 5
    assert summary.controls == (ControlTotal("AUD", 2, 150025),)


def test_a_file_without_credits_states_no_control_total(read: Read) -> None:
    _, summary = read(aba(AbaDetail("033-000", "87654321", 100, "BALANCE", code="13")))
    assert (summary.stated_count, summary.controls) == (1, ())
    _, empty = read(aba())
    assert (empty.stated_count, empty.controls) == (0, ())


@pytest.mark.parametrize(
    ("edit", "message", "code"),
    [
        (
            lambda lines: [*lines[:2], AbaFile([PAY]).file_total(count=2)],
            f"x.aba: {DISAGREE}: the file total record (line 3) says 2 detail records, credits 150025, debits 0, "
            "net 150025 cents; the file has 1 detail records, credits 150025, debits 0, net 150025 cents",
            "AM18",
        ),
        (
            lambda lines: [*lines[:2], _with(lines[2], 21, "0000000001")],
            "x.aba: the file total record (line 3) has net total 1, not credits minus debits (150025)",
            "AM10",
        ),
        (
            lambda lines: [*lines, lines[1]],
            "x.aba: line 4 comes after the file total record (line 3); submit one ABA file at a time",
            "FF01",
        ),
        (
            lambda lines: [_with(lines[0], 75, "310225"), *lines[1:]],
            "x.aba: the processing date (positions 75-80) on line 1 is not DDMMYY",
            "FF01",
        ),
        (
            lambda lines: [lines[0], "1" * (MAX_LINE_BYTES + 1), *lines[1:]],
            f"x.aba: line 2 is longer than {MAX_LINE_BYTES} bytes; not a payment file",
            "FF01",
        ),
    ],
)
def test_a_refused_aba_file_is_named_and_says_why(read: Read, edit: object, message: str, code: str) -> None:
    lines = AbaFile([PAY]).text().split("\r\n")[:3]
    with pytest.raises(FileRefused) as caught:
        read(("\r\n".join(edit(lines)) + "\r\n").encode(), "aba", name="x.aba")  # type: ignore[operator]
    assert (str(caught.value), caught.value.iso_code) == (message, code)

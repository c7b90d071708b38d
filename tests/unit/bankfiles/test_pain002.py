"""The status report: pain.002 (.10, .03) valid against the official XSD, CSV and JSON forms of the same report,
the group status from the transactions' statuses, the outcome table in one place."""

import csv
import io
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from lxml import etree

from app.bankfiles import Outcome, Refusal, ReportForm, ReportHeader, TransactionStatus, iso_status, write_status_report
from app.bankfiles.outcomes import OUTCOMES
from app.bankfiles.pain002 import MAX_TEXT
from tests.utils.pain002 import read_pain002, xsd_errors

XML_FORMS = [ReportForm.PAIN_002_10, ReportForm.PAIN_002_03]
NOW = datetime(2025, 5, 2, 8, 15, tzinfo=UTC)
DOCS = Path(__file__).parents[3] / "docs" / "bank-files.md"


def header(counts: dict[Outcome, int], refusal: Refusal | None = None) -> ReportHeader:
    return ReportHeader("RPT-0001", NOW, "ACME-20250501-001", "pain.001.001.09", counts, 3, Decimal("31.50"), refusal)


def report(h: ReportHeader, lines: list[TransactionStatus], form: ReportForm) -> bytes:
    sink = io.BytesIO()
    write_status_report(sink, h, lines, form)
    return sink.getvalue()


LINES = [
    TransactionStatus("PMT-1", "E-1", Outcome.BOOKED, "I-1"),
    TransactionStatus("PMT-1", "E-2", Outcome.CLOSED_ACCOUNT, detail="creditor account 062-000 ****5678 is closed"),
    TransactionStatus("PMT-2", "E-3", Outcome.IN_FLIGHT),
]
COUNTS = {Outcome.BOOKED: 1, Outcome.CLOSED_ACCOUNT: 1, Outcome.IN_FLIGHT: 1}


@pytest.mark.parametrize("form", XML_FORMS)
def test_the_report_is_valid_and_says_each_transactions_status(form: ReportForm) -> None:
    data = report(header(COUNTS), LINES, form)
    assert xsd_errors(data, form.value) == []
    parsed = read_pain002(data)
    assert parsed.original_message_id == "ACME-20250501-001"
    assert parsed.group_status == "PDNG"
    assert parsed.per_status == {"ACSC": 1, "PDNG": 1, "RJCT": 1}
    assert parsed.transactions == [
        ("PMT-1", "I-1", "E-1", "ACSC", None),
        ("PMT-1", None, "E-2", "RJCT", "AC04"),
        ("PMT-2", None, "E-3", "PDNG", None),
    ]


@pytest.mark.parametrize(
    ("outcomes", "group"),
    [
        ([Outcome.BOOKED, Outcome.BOOKED], "ACSC"),
        ([Outcome.DUPLICATE, Outcome.EXPIRED], "RJCT"),
        ([Outcome.BOOKED, Outcome.OVER_LIMIT], "PART"),
        ([Outcome.BOOKED, Outcome.HELD_FOR_REVIEW], "PDNG"),
        ([Outcome.INVALID, Outcome.IN_FLIGHT], "PDNG"),
    ],
)
def test_the_group_status_follows_from_the_transactions(outcomes: list[Outcome], group: str) -> None:
    lines = [TransactionStatus("PMT-1", f"E-{n}", o) for n, o in enumerate(outcomes)]
    counts: dict[Outcome, int] = {}
    for o in outcomes:
        counts[o] = counts.get(o, 0) + 1
    for form in XML_FORMS:
        data = report(header(counts), lines, form)
        assert xsd_errors(data, form.value) == []
        assert read_pain002(data).group_status == group


@pytest.mark.parametrize("form", XML_FORMS)
def test_a_refused_file_gets_a_report_with_the_reason_and_no_transactions(form: ReportForm) -> None:
    refusal = Refusal("AM16", "GrpHdr/CtrlSum says 31.49; the transactions' amounts add up to 31.50")
    data = report(header({}, refusal), [], form)
    assert xsd_errors(data, form.value) == []
    parsed = read_pain002(data)
    assert (parsed.group_status, parsed.group_reason, parsed.transactions) == ("RJCT", "AM16", [])


def test_a_report_with_no_transaction_and_no_refusal_is_a_mistake() -> None:
    with pytest.raises(ValueError, match="must carry the refusal"):
        report(header({}), [], ReportForm.PAIN_002_10)


@pytest.mark.parametrize("form", list(ReportForm))
def test_lines_that_do_not_match_the_announced_counts_are_a_mistake(form: ReportForm) -> None:
    with pytest.raises(ValueError, match="announced"):
        report(header({Outcome.BOOKED: 1, Outcome.CLOSED_ACCOUNT: 1, Outcome.IN_FLIGHT: 2}), LINES, form)


def test_a_payment_information_block_that_comes_twice_is_a_mistake() -> None:
    lines = [*LINES, TransactionStatus("PMT-1", "E-4", Outcome.BOOKED)]
    with pytest.raises(ValueError, match="comes twice"):
        report(header({**COUNTS, Outcome.BOOKED: 2}), lines, ReportForm.PAIN_002_10)


@pytest.mark.parametrize(("length", "ok"), [(35, True), (36, False), (0, False)])
def test_identifiers_are_iso_max35text(length: int, ok: bool) -> None:
    lines = (
        [TransactionStatus("PMT-1", "E" * length, Outcome.BOOKED)]
        if length
        else [TransactionStatus("", "E", Outcome.BOOKED)]
    )
    if ok:
        assert xsd_errors(report(header({Outcome.BOOKED: 1}), lines, ReportForm.PAIN_002_10), "pain.002.001.10") == []
        return
    with pytest.raises(ValueError, match="1 to 35 characters"):
        report(header({Outcome.BOOKED: 1}), lines, ReportForm.PAIN_002_10)


def addtl_inf(data: bytes) -> list[str]:
    return [str(t) for t in etree.fromstring(data).xpath("//*[local-name()='AddtlInf']/text()")]


def test_long_or_odd_details_fit_addtlinf() -> None:
    detail = "why " * 100 + "\x00\x07 bell"
    lines = [TransactionStatus("PMT-1", "E-1", Outcome.INVALID, detail=detail)]
    data = report(header({Outcome.INVALID: 1}), lines, ReportForm.PAIN_002_10)
    assert xsd_errors(data, "pain.002.001.10") == []
    texts = addtl_inf(data)
    assert [len(t) for t in texts] == [103, 103, 105]  # 26 whole "why"s, twice; then 25 and the ellipsis
    assert texts[-1].endswith("why why …")


# What ingress says of a row with several faults: well over one Max105Text, words of every length.
LONG_REASON = (
    "row 12: creditor_account must be 6 to 10 digits; amount_cents 150000000 is over the tenant's limit of "
    "100000000 cents per payment; currency XAU is not an active ISO 4217 currency; payment_reference duplicates "
    "row 3"
)


@pytest.mark.parametrize("form", XML_FORMS)
def test_a_long_reason_is_split_between_words_and_the_parts_read_back_as_it(form: ReportForm) -> None:
    lines = [TransactionStatus("PMT-1", "E-1", Outcome.INVALID, detail=LONG_REASON)]
    data = report(header({Outcome.INVALID: 1}), lines, form)
    assert xsd_errors(data, form.value) == []  # the official XSD (app/bankfiles/schemas/README.md)
    parts = addtl_inf(data)
    assert len(parts) == 3
    assert all(1 <= len(p) <= MAX_TEXT for p in parts)
    assert " ".join(parts) == LONG_REASON  # no word cut in two, none lost
    assert all(p == p.strip() for p in parts)


@pytest.mark.parametrize(
    ("detail", "expected"),
    [
        ("a" * 105 + " b", ["a" * 105, "b"]),  # a part exactly the maximum
        ("a" * 104 + " b", ["a" * 104, "b"]),  # 106 characters: cut at the space
        ("a" * 103 + " b", ["a" * 103 + " b"]),  # 105 characters: one part
        ("x" * 230, ["x" * 105, "x" * 105, "x" * 20]),  # one word longer than a part: cut where it must be
        ("word  " * 3, ["word  word  word"]),  # runs of spaces inside a part are the text's own
    ],
)
def test_parts_are_cut_at_the_last_space_that_fits(detail: str, expected: list[str]) -> None:
    lines = [TransactionStatus("PMT-1", "E-1", Outcome.INVALID, detail=detail)]
    data = report(header({Outcome.INVALID: 1}), lines, ReportForm.PAIN_002_10)
    assert xsd_errors(data, "pain.002.001.10") == []
    assert addtl_inf(data) == expected


def test_a_reason_longer_than_three_parts_ends_with_an_ellipsis_after_a_whole_word() -> None:
    detail = " ".join(f"fault{n}" for n in range(100))
    lines = [TransactionStatus("PMT-1", "E-1", Outcome.INVALID, detail=detail)]
    data = report(header({Outcome.INVALID: 1}), lines, ReportForm.PAIN_002_03)
    assert xsd_errors(data, "pain.002.001.03") == []
    parts = addtl_inf(data)
    assert len(parts) == 3
    assert all(len(p) <= MAX_TEXT for p in parts)
    assert parts[-1].endswith("…")
    kept = " ".join(parts).removesuffix("…").rstrip().split(" ")
    assert kept == detail.split(" ")[: len(kept)]  # whole words, in order, nothing cut


def test_the_csv_form_has_a_group_row_then_one_row_per_transaction() -> None:
    rows = list(csv.DictReader(io.StringIO(report(header(COUNTS), LINES, ReportForm.CSV).decode())))
    assert [(r["level"], r["end_to_end_id"], r["status"], r["reason"], r["outcome"]) for r in rows] == [
        ("group", "", "PDNG", "", ""),
        ("transaction", "E-1", "ACSC", "", "booked"),
        ("transaction", "E-2", "RJCT", "AC04", "closed_account"),
        ("transaction", "E-3", "PDNG", "", "in_flight"),
    ]
    assert {r["original_message_id"] for r in rows} == {"ACME-20250501-001"}


def test_the_json_form_is_one_document_with_the_same_statuses() -> None:
    doc = json.loads(report(header(COUNTS), LINES, ReportForm.JSON))
    assert doc["group_status"] == "PDNG"
    assert doc["counts"] == {"ACSC": 1, "PDNG": 1, "RJCT": 1}
    assert doc["original_control_sum"] == "31.50"
    assert [(t["end_to_end_id"], t["status"], t["reason"]) for t in doc["transactions"]] == [
        ("E-1", "ACSC", None),
        ("E-2", "RJCT", "AC04"),
        ("E-3", "PDNG", None),
    ]


def test_every_outcome_has_an_iso_status_and_every_rejection_a_reason() -> None:
    assert set(OUTCOMES) == set(Outcome)
    for outcome in Outcome:
        status = iso_status(outcome)
        assert status.status in {"ACSC", "PDNG", "RJCT"}
        assert (status.reason is not None) == (status.status == "RJCT"), outcome


def test_a_payment_that_may_still_be_booked_is_never_reported_rejected() -> None:
    # A customer told RJCT sends the payment again; a replay of the first would then pay twice.
    assert iso_status(Outcome.HELD_FOR_REVIEW).status == "PDNG"
    assert iso_status(Outcome.IN_FLIGHT).status == "PDNG"


def test_the_documented_table_is_the_table_in_the_code() -> None:
    doc = DOCS.read_text()
    for outcome, status in OUTCOMES.items():
        assert f"| `{outcome.value}` | {status.status} | {status.reason or '-'} |" in doc, outcome

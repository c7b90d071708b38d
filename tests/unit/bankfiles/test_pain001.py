"""pain.001 (.09 and .03) mapped to the contract's payment fields; the file's own totals checked; what remit
cannot pay (IBANs, other clearing systems, BIC-only agents, cheques, converted amounts) rejected with why."""

import re
from decimal import Decimal

import pytest
from lxml import etree

from app.bankfiles import Origin
from app.bankfiles.control_totals import DISAGREE
from app.bankfiles.pain001 import _forget
from app.bankfiles.pain001_parties import under
from app.bankfiles.rows import PARSE_ERROR
from app.errors import FileRefused
from app.publisher.bulk_file import ControlTotal
from app.publisher.validation import validate_rows
from tests.unit.bankfiles.conftest import Read
from tests.utils.bankfile_writers import (
    PAIN_001_03,
    PAIN_001_09,
    Block,
    GroupHeader,
    Tx,
    pain001,
    pain001_chunks,
)
from tests.utils.factories import batch_context

VERSIONS = pytest.mark.parametrize("version", [PAIN_001_09, PAIN_001_03])
IBAN = "<Id><IBAN>DE89370400440532013000</IBAN></Id>"


def file_of(version: str, header: GroupHeader, *blocks: Block) -> bytes:
    return "".join(pain001_chunks(version, header, blocks)).encode()


@VERSIONS
def test_a_transaction_becomes_the_contracts_payment_fields(read: Read, version: str) -> None:
    tx = Tx("INV-2025-0001", "1500.25", "AUD", "062-000", "12345678", instruction_id="INSTR-1")
    rows, summary = read(pain001(version, [tx], message_id="ACME-20250501-001"))
    assert [r.fields for r in rows] == [
        {
            "payment_reference": "INV-2025-0001",
            "amount_cents": 150025,
            "currency": "AUD",
            "debtor_bsb": "033-000",
            "debtor_account": "87654321",
            "creditor_bsb": "062-000",
            "creditor_account": "12345678",
        }
    ]
    assert rows[0].typed is True
    assert rows[0].origin == Origin("PMT-1", "INV-2025-0001", "INSTR-1")
    assert summary.format == version
    assert summary.identity == "ACME-20250501-001"
    assert summary.stated_count == 1
    assert summary.stated_sum == Decimal("1500.25")
    assert summary.controls == (ControlTotal("AUD", 1, 150025),)


@VERSIONS
def test_valid_transactions_pass_remits_validation_unchanged(read: Read, version: str) -> None:
    txs = [Tx(f"E2E-{n}", f"{n}.00", creditor_account=f"1000000{n}") for n in range(1, 6)]
    rows, _ = read(pain001(version, txs))
    ctx = batch_context()
    batch = validate_rows(rows, ctx)
    assert batch.rejected == []
    assert [(m.payment_reference, m.amount_cents) for m in batch.accepted] == [
        (f"E2E-{n}", n * 100) for n in range(1, 6)
    ]


def test_a_bsb_written_with_its_hyphen_is_the_same_bsb(read: Read) -> None:
    agent = (
        "<FinInstnId><ClrSysMmbId><ClrSysId><Cd>AUBSB</Cd></ClrSysId><MmbId>062-000</MmbId></ClrSysMmbId></FinInstnId>"
    )
    rows, _ = read(pain001(PAIN_001_09, [Tx("E-1", "1.00", creditor_agent_xml=agent)]))
    assert rows[0].fields["creditor_bsb"] == "062-000"
    assert PARSE_ERROR not in rows[0].fields


def test_row_numbers_are_transaction_positions_even_on_one_line(read: Read) -> None:
    one_line = pain001(PAIN_001_09, [Tx(f"E-{n}", "1.00") for n in range(3)]).replace(b"\n", b"")
    rows, _ = read(one_line)
    assert [r.number for r in rows] == [1, 2, 3]


def test_the_control_total_is_stated_only_for_a_single_currency_file(read: Read) -> None:
    _, summary = read(pain001(PAIN_001_09, [Tx("E-1", "1.00", "AUD"), Tx("E-2", "2", "JPY")]))
    assert summary.stated_sum == Decimal("3.00")  # CtrlSum still checked, as the checksum it is
    assert summary.controls == ()


@pytest.mark.parametrize(("stated", "refused"), [(2, True), (3, False), (4, True)])
def test_group_number_of_transactions_must_match(read: Read, stated: int, refused: bool) -> None:
    data = pain001(PAIN_001_09, [Tx(f"E-{n}", "1.00") for n in range(3)], count=stated)
    if not refused:
        assert len(read(data)[0]) == 3
        return
    with pytest.raises(FileRefused) as caught:
        read(data)
    assert f"NbOfTxs says {stated} transactions; the file has 3" in str(caught.value)
    assert caught.value.iso_code == "AM19"


@pytest.mark.parametrize(("stated", "refused"), [("30.99", True), ("31.00", False), ("31", False), ("31.01", True)])
def test_group_control_sum_must_match_exactly(read: Read, stated: str, refused: bool) -> None:
    data = pain001(PAIN_001_09, [Tx("E-1", "10.50"), Tx("E-2", "20.50")], control_sum=stated)
    if not refused:
        assert len(read(data)[0]) == 2
        return
    with pytest.raises(FileRefused) as caught:
        read(data)
    assert f"CtrlSum says {stated}; the transactions' amounts add up to 31.00" in str(caught.value)
    assert caught.value.iso_code == "AM16"


def test_a_payment_information_blocks_own_totals_are_checked(read: Read) -> None:
    txs = [Tx("E-1", "1.00"), Tx("E-2", "2.00")]
    good = Block("B-GOOD", txs, count=2, control_sum="3.00")
    for bad, code in [
        (Block("B-BAD", [Tx("E-3", "1.00")], count=2), "AM20"),
        (Block("B-BAD", [Tx("E-3", "1.00")], control_sum="1.01"), "AM17"),
    ]:
        data = file_of(PAIN_001_09, GroupHeader("M-1", 3, "4.00"), good, bad)
        with pytest.raises(FileRefused) as caught:
            read(data)
        assert "PmtInf 'B-BAD'" in str(caught.value)
        assert caught.value.iso_code == code


def test_blocks_carry_their_own_debtor_and_id(read: Read) -> None:
    data = file_of(
        PAIN_001_03,
        GroupHeader("M-1", 2),
        Block("B-1", [Tx("E-1", "1.00")], debtor_bsb="033-001", debtor_account="11111111"),
        Block("B-2", [Tx("E-2", "1.00")], debtor_bsb="033-002", debtor_account="22222222"),
    )
    rows, _ = read(data)
    assert [(r.origin.payment_information_id if r.origin else None, r.fields["debtor_bsb"]) for r in rows] == [
        ("B-1", "033-001"),
        ("B-2", "033-002"),
    ]


def _rejection(read: Read, data: bytes) -> str:
    rows, _ = read(data)
    assert len(rows) == 1
    return str(rows[0].fields[PARSE_ERROR])


@pytest.mark.parametrize(
    ("tx", "reason"),
    [
        (Tx("E-1", "1.00", creditor_account_xml=IBAN), "creditor account is an IBAN"),
        (
            Tx("E-1", "1.00", creditor_agent_xml="<FinInstnId><BICFI>WPACAU2SXXX</BICFI></FinInstnId>"),
            "creditor agent has a BIC only",
        ),
        (
            Tx(
                "E-1",
                "1.00",
                creditor_agent_xml="<FinInstnId><ClrSysMmbId><ClrSysId><Cd>USABA</Cd></ClrSysId>"
                "<MmbId>021000021</MmbId></ClrSysMmbId></FinInstnId>",
            ),
            "clearing system 'USABA', not AUBSB",
        ),
        (
            Tx(
                "E-1",
                "1.00",
                creditor_agent_xml="<FinInstnId><ClrSysMmbId><MmbId>062000</MmbId></ClrSysMmbId></FinInstnId>",
            ),
            "not given as ClrSysId/Cd",
        ),
        (
            Tx(
                "E-1",
                "1.00",
                creditor_agent_xml="<FinInstnId><ClrSysMmbId><ClrSysId><Cd>AUBSB</Cd></ClrSysId>"
                "<MmbId>06200</MmbId></ClrSysMmbId></FinInstnId>",
            ),
            "MmbId is not a BSB",
        ),
        (
            Tx(
                "E-1",
                "1.00",
                creditor_account_xml="<Id><Othr><Id>12345678</Id><SchmeNm><Cd>CUID</Cd></SchmeNm></Othr></Id>",
            ),
            "scheme 'CUID'",
        ),
        (
            Tx("E-1", "1.00", amount_xml='<EqvtAmt><Amt Ccy="AUD">1.00</Amt><CcyOfTrf>USD</CcyOfTrf></EqvtAmt>'),
            "EqvtAmt",
        ),
        (Tx("E-1", "1.005"), "more decimal places than AUD's 2"),
        (Tx("E-1", "1", currency="XAU"), "no minor unit"),
        (Tx("NOTPROVIDED", "1.00"), "EndToEndId is NOTPROVIDED"),
    ],
)
def test_what_remit_cannot_pay_is_a_rejected_row_with_why(read: Read, tx: Tx, reason: str) -> None:
    reasons = _rejection(read, pain001(PAIN_001_09, [tx]))
    assert reason in reasons
    assert "(transaction at line 5)" in reasons
    assert "021000021" not in reasons
    assert "DE89370400440532013000" not in reasons


def test_a_debtor_remit_cannot_debit_rejects_every_transaction_of_its_block(read: Read) -> None:
    bad = Block("B-IBAN", [Tx("E-1", "1.00"), Tx("E-2", "1.00")], debtor_account_xml=IBAN)
    good = Block("B-OK", [Tx("E-3", "1.00")])
    rows, _ = read(file_of(PAIN_001_09, GroupHeader("M-1", 3), bad, good))
    assert ["debtor account is an IBAN" in str(r.fields.get(PARSE_ERROR)) for r in rows] == [True, True, False]


def test_a_cheque_block_is_not_a_credit_transfer(read: Read) -> None:
    rows, _ = read(file_of(PAIN_001_09, GroupHeader("M-1", 1), Block("B-1", [Tx("E-1", "1.00")], method="CHK")))
    assert "PmtMtd is 'CHK'" in str(rows[0].fields[PARSE_ERROR])


def test_a_rejected_row_keeps_what_identifies_the_payment(read: Read) -> None:
    rows, _ = read(pain001(PAIN_001_09, [Tx("E-1", "2.50", creditor_account_xml=IBAN, instruction_id="I-1")]))
    fields = rows[0].fields
    assert (fields["payment_reference"], fields["currency"], fields["amount_cents"]) == ("E-1", "AUD", 250)
    assert "creditor_account" not in fields
    assert rows[0].origin == Origin("PMT-1", "E-1", "I-1")  # which its pain.002 status line repeats


@VERSIONS
def test_a_file_that_breaks_the_schema_is_refused(read: Read, version: str) -> None:
    missing_count = file_of(version, GroupHeader("M-1", None), Block("B-1", [Tx("E-1", "1.00")]))
    with pytest.raises(FileRefused) as caught:
        read(missing_count)
    assert f"does not conform to the {version} schema" in str(caught.value)
    assert caught.value.iso_code == "FF01"


def test_a_schema_error_names_no_value_from_the_file(read: Read) -> None:
    # Othr/Id is Max34Text: a 40-digit "account" breaks the schema; the error must not repeat it.
    account = "1234567890" * 4
    data = pain001(PAIN_001_09, [Tx("E-1", "1.00", creditor_account=account)])
    with pytest.raises(FileRefused) as caught:
        read(data)
    assert "schema" in str(caught.value)
    assert account not in str(caught.value)
    assert "12345678" not in str(caught.value)


def test_an_override_to_the_other_version_is_refused_at_the_root(read: Read) -> None:
    with pytest.raises(FileRefused) as caught:
        read(pain001(PAIN_001_03, [Tx("E-1", "1.00")]), "pain.001.001.09")
    assert "not <Document> in urn:iso:std:iso:20022:tech:xsd:pain.001.001.09" in str(caught.value)


# ---------------------------------------------------------------- at the edges (what mutation testing asked for)


@pytest.mark.parametrize(("written", "refused"), [("000000000000003", False), ("000000000000002", True)])
def test_a_count_of_fifteen_digits_is_read(read: Read, written: str, refused: bool) -> None:
    """NbOfTxs is Max15NumericText: 15 digits, leading zeros and all, are a count the file is held to."""
    data = pain001(PAIN_001_09, [Tx(f"E-{n}", "1.00") for n in range(3)]).replace(
        b"<NbOfTxs>3</NbOfTxs>", f"<NbOfTxs>{written}</NbOfTxs>".encode(), 1
    )
    if not refused:
        assert read(data)[1].stated_count == 3
        return
    with pytest.raises(FileRefused, match="GrpHdr/NbOfTxs says 2 transactions; the file has 3"):
        read(data)


@pytest.mark.parametrize(
    ("data", "message", "code"),
    [
        (
            pain001(PAIN_001_09, [Tx("E-1", "1.00"), Tx("E-2", "2.00")], count=3),
            f"p.xml: {DISAGREE}: GrpHdr/NbOfTxs says 3 transactions; the file has 2",
            "AM19",
        ),
        (
            pain001(PAIN_001_09, [Tx("E-1", "1.00"), Tx("E-2", "2.00")], control_sum="3.01"),
            f"p.xml: {DISAGREE}: GrpHdr/CtrlSum says 3.01; the transactions' amounts add up to 3.00",
            "AM16",
        ),
        (
            file_of(PAIN_001_09, GroupHeader("M-1", 1), Block("B-1", [Tx("E-1", "1.00")], count=2)),
            f"p.xml: {DISAGREE}: PmtInf 'B-1' NbOfTxs says 2 transactions; it has 1",
            "AM20",
        ),
        (
            file_of(PAIN_001_09, GroupHeader("M-1", 1), Block("B-1", [Tx("E-1", "1.00")], control_sum="0.99")),
            f"p.xml: {DISAGREE}: PmtInf 'B-1' CtrlSum says 0.99; its amounts add up to 1.00",
            "AM17",
        ),
        (
            # Both blocks are wrong: the first is named.
            file_of(
                PAIN_001_09,
                GroupHeader("M-1", 2),
                Block("B-1", [Tx("E-1", "1.00")], control_sum="0.99"),
                Block("B-2", [Tx("E-2", "1.00")], count=2),
            ),
            f"p.xml: {DISAGREE}: PmtInf 'B-1' CtrlSum says 0.99; its amounts add up to 1.00",
            "AM17",
        ),
        (
            # Nested past libxml2's 256 levels, the validating parser stops as it reads (not at the end), with the
            # schema error it logged first.
            pain001(PAIN_001_09, [Tx("E-1", "1.00")]).replace(
                b"<Ustrd>Invoice E-1</Ustrd>", b"<Ustrd>" + b"<a>" * 300 + b"</a>" * 300 + b"</Ustrd>"
            ),
            "p.xml does not conform to the pain.001.001.09 schema: Element 'Ustrd': Element content is not allowed, "
            "because the type definition is simple.",
            "FF01",
        ),
        (
            pain001(PAIN_001_09, [Tx("E-1", "1.00")]).replace(b"<PmtMtd>TRF</PmtMtd>", b"<PmtMtd>TRF</PmtMtd><X/>"),
            "p.xml does not conform to the pain.001.001.09 schema: Element 'X': This element is not expected. "
            "Expected is one of ( BtchBookg, NbOfTxs, CtrlSum, PmtTpInf, ReqdExctnDt ).",
            "FF01",
        ),
        (
            # A transaction without an amount (the schema's at the end): a refusal, never a crash.
            pain001(PAIN_001_09, [Tx("E-1", "1.00")]).replace(b'<InstdAmt Ccy="AUD">1.00</InstdAmt>', b""),
            "p.xml does not conform to the pain.001.001.09 schema: Element 'Amt': Missing child element(s). "
            "Expected is one of ( InstdAmt, EqvtAmt ).",
            "FF01",
        ),
        (
            # A block without transactions: the same.
            file_of(PAIN_001_09, GroupHeader("M-1", 1), Block("B-0", []), Block("B-1", [Tx("E-1", "1.00")])),
            "p.xml does not conform to the pain.001.001.09 schema: Element 'PmtInf': Missing child element(s). "
            "Expected is one of ( DbtrAgtAcct, InstrForDbtrAgt, UltmtDbtr, ChrgBr, ChrgsAcct, ChrgsAcctAgt, "
            "CdtTrfTxInf ).",
            "FF01",
        ),
        (
            pain001(PAIN_001_09, [Tx("E-1", "1.00")]) + b"garbage",
            "p.xml is not well-formed XML at line 8: Extra content at the end of the document, line 8, column 1",
            "FF01",
        ),
        (
            pain001(PAIN_001_09, [Tx("E-1", "1.00")], extra_prolog="<!DOCTYPE Document>\n"),
            "p.xml declares a DOCTYPE: refused (a DTD can define entities that expand without limit or read other "
            "files). ISO 20022 files never need one.",
            "FF01",
        ),
        (
            b'<?xml version="1.0"?>\n' + b"<!--" + b"x" * 70_000 + b"-->",
            "p.xml starts like XML but has no element in its first 65536 bytes",
            "FF01",
        ),
        (
            pain001(PAIN_001_03, [Tx("E-1", "1.00")]),
            "p.xml: the root element is {urn:iso:std:iso:20022:tech:xsd:pain.001.001.03}Document, not <Document> in "
            "urn:iso:std:iso:20022:tech:xsd:pain.001.001.09",
            "FF01",
        ),
    ],
)
def test_a_refused_pain001_is_named_and_says_why(read: Read, data: bytes, message: str, code: str) -> None:
    with pytest.raises(FileRefused) as caught:
        read(data, PAIN_001_09, name="p.xml")
    assert (str(caught.value), caught.value.iso_code) == (message, code)


AGENT_NAMED_ONLY = "<FinInstnId><Nm>Some Bank</Nm></FinInstnId>"
NEEDS_BSB = "remit needs its BSB (ClrSysMmbId with ClrSysId/Cd AUBSB)"


def _without(element: str, data: bytes) -> bytes:
    return re.sub(f"<{element}>.*?</{element}>".encode(), b"", data)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (
            _without("CdtrAcct", pain001(PAIN_001_09, [Tx("E-1", "1.00")])),
            "creditor account is missing: remit needs Id/Othr/Id",
        ),
        (_without("CdtrAgt", pain001(PAIN_001_09, [Tx("E-1", "1.00")])), f"creditor agent is missing: {NEEDS_BSB}"),
        (
            pain001(PAIN_001_09, [Tx("E-1", "1.00", creditor_agent_xml=AGENT_NAMED_ONLY)]),
            f"creditor agent has no clearing-system member id: {NEEDS_BSB}",
        ),
        (
            pain001(
                PAIN_001_09,
                [
                    Tx(
                        "E-1",
                        "1.00",
                        creditor_agent_xml="<FinInstnId><ClrSysMmbId><MmbId>062000</MmbId></ClrSysMmbId></FinInstnId>",
                    )
                ],
            ),
            "creditor agent is in a clearing system not given as ClrSysId/Cd, not AUBSB: remit moves money between "
            "Australian BSBs only",
        ),
        (
            pain001(
                PAIN_001_09,
                [
                    Tx(
                        "E-1",
                        "1.00",
                        creditor_account_xml="<Id><Othr><Id>12345678</Id><SchmeNm><Prtry>ABCDEFGHIJKLMNOP</Prtry>"
                        "</SchmeNm></Othr></Id>",
                    )
                ],
            ),
            "creditor account is in scheme 'ABCDEFGHIJKL': remit takes bank account numbers (BBAN)",  # 12 characters
        ),
        (
            file_of(
                PAIN_001_09,
                GroupHeader("M-1", 1),
                Block(
                    "B-1", [Tx("E-1", "1.00")], debtor_agent_xml="<FinInstnId><BICFI>WPACAU2SXXX</BICFI></FinInstnId>"
                ),
            ),
            f"debtor agent has a BIC only: {NEEDS_BSB}",
        ),
        (
            pain001(PAIN_001_09, [Tx("NOTPROVIDED", "1.00", creditor_account_xml=IBAN)]),
            "EndToEndId is NOTPROVIDED: remit needs a unique EndToEndId (it is the payment_reference); "
            "creditor account is an IBAN: remit moves money between Australian BSB accounts (Id/Othr/Id)",
        ),
        (
            pain001(
                PAIN_001_09,
                [Tx("E-1", "1.00", amount_xml='<EqvtAmt><Amt Ccy="AUD">1.00</Amt><CcyOfTrf>USD</CcyOfTrf></EqvtAmt>')],
            ),
            "Amt has no InstdAmt (EqvtAmt, an amount to convert into another currency, is not supported)",
        ),
        (
            # -0.00 is an xs:decimal of at least 0 (the schema takes it); remit takes no sign but +.
            pain001(PAIN_001_09, [Tx("E-1", "-0.00")], control_sum="0"),
            "amount '-0.00' is not a decimal number of at most 18 digits",
        ),
    ],
)
def test_every_reason_a_transaction_gives_in_full(read: Read, data: bytes, reason: str) -> None:
    rows, _ = read(data)
    assert [r.fields[PARSE_ERROR] for r in rows] == [f"{reason} (transaction at line 5)"]


def test_the_paths_below_a_parent_element() -> None:
    assert under("CdtrAgt", {"": "agent", "FinInstnId/BICFI": "bic"}) == {
        "CdtrAgt": "agent",
        "CdtrAgt/FinInstnId/BICFI": "bic",
    }


def test_what_has_been_read_is_freed_up_to_the_element_read() -> None:
    block = etree.fromstring("<PmtInf><Id>B-1</Id><Tx>1</Tx><Tx>2<Amt>5</Amt></Tx>\n</PmtInf>")
    tx = block[2]
    _forget(tx)
    assert list(block) == [tx]  # everything before it is gone
    assert (tx.text, len(tx)) == (None, 0)  # and its own content
    assert tx.tail == "\n"  # the text after it is the parser's, still reading (lxml's advice for iterparse)

"""pain.001 (.09 and .03) mapped to the contract's payment fields; the file's own totals checked; what remit
cannot pay (IBANs, other clearing systems, BIC-only agents, cheques, converted amounts) rejected with why."""

from decimal import Decimal

import pytest

from app.bankfiles import Origin
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
    rows, _ = read(pain001(PAIN_001_09, [Tx("E-1", "2.50", creditor_account_xml=IBAN)]))
    fields = rows[0].fields
    assert (fields["payment_reference"], fields["currency"], fields["amount_cents"]) == ("E-1", "AUD", 250)
    assert "creditor_account" not in fields


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

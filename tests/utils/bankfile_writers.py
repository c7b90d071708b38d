"""Write pain.001 and ABA files the way a bank customer's system would, for tests, examples and benchmarks.

Plain text templates on purpose: a test can say exactly what each file holds, including what remit must
refuse (an IBAN, a BIC-only agent, a wrong CtrlSum), and a benchmark can write hundreds of MB as a stream.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TextIO
from xml.sax.saxutils import escape, quoteattr

PAIN_001_09 = "pain.001.001.09"
PAIN_001_03 = "pain.001.001.03"


def bsb_agent(bsb: str) -> str:
    """A DbtrAgt/CdtrAgt identified by its BSB, as Australian banks write it (MmbId without the hyphen)."""
    return (
        "<FinInstnId><ClrSysMmbId><ClrSysId><Cd>AUBSB</Cd></ClrSysId>"
        f"<MmbId>{escape(bsb.replace('-', ''))}</MmbId></ClrSysMmbId></FinInstnId>"
    )


def other_account(number: str) -> str:
    return f"<Id><Othr><Id>{escape(number)}</Id></Othr></Id>"


@dataclass(frozen=True, slots=True)
class Tx:
    end_to_end_id: str
    amount: str  # as written in the file: "1500.00"
    currency: str = "AUD"
    creditor_bsb: str = "062-000"
    creditor_account: str = "12345678"
    instruction_id: str | None = None
    creditor_agent_xml: str | None = None  # replaces the BSB agent, to write what remit must refuse
    creditor_account_xml: str | None = None
    amount_xml: str | None = None  # replaces <InstdAmt>, e.g. with an <EqvtAmt>
    creditor_name: str | None = None
    remittance: str | None = None

    def xml(self) -> str:
        instr = f"<InstrId>{escape(self.instruction_id)}</InstrId>" if self.instruction_id else ""
        amount = self.amount_xml or f"<InstdAmt Ccy={quoteattr(self.currency)}>{escape(self.amount)}</InstdAmt>"
        agent = self.creditor_agent_xml or bsb_agent(self.creditor_bsb)
        account = self.creditor_account_xml or other_account(self.creditor_account)
        return (
            f"<CdtTrfTxInf><PmtId>{instr}<EndToEndId>{escape(self.end_to_end_id)}</EndToEndId></PmtId>"
            f"<Amt>{amount}</Amt><CdtrAgt>{agent}</CdtrAgt>"
            f"<Cdtr><Nm>{escape(self.creditor_name or 'Payee ' + self.end_to_end_id)}</Nm></Cdtr>"
            f"<CdtrAcct>{account}</CdtrAcct>"
            f"<RmtInf><Ustrd>{escape(self.remittance or 'Invoice ' + self.end_to_end_id)}</Ustrd></RmtInf>"
            "</CdtTrfTxInf>\n"
        )


@dataclass(frozen=True, slots=True)
class Block:
    id: str
    txs: Iterable[Tx]
    debtor_bsb: str = "033-000"
    debtor_account: str = "87654321"
    count: int | None = None  # NbOfTxs to state; None leaves it out
    control_sum: str | None = None
    method: str = "TRF"
    debtor_agent_xml: str | None = None
    debtor_account_xml: str | None = None
    debtor_name: str = "Acme Pty Ltd"

    def head(self, version: str) -> str:
        date = "<ReqdExctnDt>2025-05-02</ReqdExctnDt>"
        if version == PAIN_001_09:
            date = "<ReqdExctnDt><Dt>2025-05-02</Dt></ReqdExctnDt>"
        count = f"<NbOfTxs>{self.count}</NbOfTxs>" if self.count is not None else ""
        total = f"<CtrlSum>{self.control_sum}</CtrlSum>" if self.control_sum is not None else ""
        agent = self.debtor_agent_xml or bsb_agent(self.debtor_bsb)
        account = self.debtor_account_xml or other_account(self.debtor_account)
        return (
            f"<PmtInf><PmtInfId>{escape(self.id)}</PmtInfId><PmtMtd>{self.method}</PmtMtd>{count}{total}{date}"
            f"<Dbtr><Nm>{escape(self.debtor_name)}</Nm></Dbtr><DbtrAcct>{account}</DbtrAcct><DbtrAgt>{agent}</DbtrAgt>\n"
        )


@dataclass(frozen=True, slots=True)
class GroupHeader:
    message_id: str
    count: int | None  # NbOfTxs is required by the schema: None writes an invalid file on purpose
    control_sum: str | None = None
    created: str = "2025-05-01T09:30:00"
    extra_prolog: str = ""  # e.g. a DOCTYPE, to test that remit refuses it
    initiating_party: str = "Acme Pty Ltd"

    def xml(self) -> str:
        count = f"<NbOfTxs>{self.count}</NbOfTxs>" if self.count is not None else ""
        total = f"<CtrlSum>{self.control_sum}</CtrlSum>" if self.control_sum is not None else ""
        return (
            f"<GrpHdr><MsgId>{escape(self.message_id)}</MsgId><CreDtTm>{self.created}</CreDtTm>{count}{total}"
            f"<InitgPty><Nm>{escape(self.initiating_party)}</Nm></InitgPty></GrpHdr>\n"
        )


def pain001_chunks(version: str, header: GroupHeader, blocks: Iterable[Block]) -> Iterator[str]:
    yield f'<?xml version="1.0" encoding="UTF-8"?>\n{header.extra_prolog}'
    yield f'<Document xmlns="urn:iso:std:iso:20022:tech:xsd:{version}"><CstmrCdtTrfInitn>\n'
    yield header.xml()
    for block in blocks:
        yield block.head(version)
        for tx in block.txs:
            yield tx.xml()
        yield "</PmtInf>\n"
    yield "</CstmrCdtTrfInitn></Document>\n"


def write_pain001(out: TextIO, version: str, header: GroupHeader, blocks: Iterable[Block]) -> None:
    for chunk in pain001_chunks(version, header, blocks):
        out.write(chunk)


def pain001(version: str, txs: list[Tx], message_id: str = "MSG-0001", **header: object) -> bytes:
    """A one-block pain.001 whose NbOfTxs and CtrlSum are right unless overridden (count=..., control_sum=...)."""
    total = str(sum((Decimal(t.amount) for t in txs), Decimal(0)))
    count = header.pop("count", len(txs))
    control_sum = header.pop("control_sum", total)
    group = GroupHeader(message_id, count, control_sum, **header)  # type: ignore[arg-type]
    block = Block("PMT-1", txs, count=len(txs), control_sum=total)
    return "".join(pain001_chunks(version, group, [block])).encode()


@dataclass(frozen=True, slots=True)
class AbaDetail:
    bsb: str
    account: str
    amount_cents: int
    lodgement_reference: str
    code: str = "53"
    title: str = "J SMITH"
    trace_bsb: str = "033-000"
    trace_account: str = "87654321"
    remitter: str = "ACME PTY LTD"
    indicator: str = " "

    def record(self) -> str:
        return (
            f"1{self.bsb:7.7}{self.account:>9.9}{self.indicator:1.1}{self.code:2.2}{self.amount_cents:010d}"
            f"{self.title:<32.32}{self.lodgement_reference:<18.18}{self.trace_bsb:7.7}{self.trace_account:>9.9}"
            f"{self.remitter:<16.16}{0:08d}"
        )


@dataclass(frozen=True, slots=True)
class AbaFile:
    details: list[AbaDetail] = field(default_factory=list)
    user_name: str = "ACME PTY LTD"
    user_id: int = 301500
    description: str = "PAYROLL"
    date: str = "010525"
    bank: str = "WBC"

    def descriptive(self) -> str:
        return (
            f"0{'':17}01{self.bank:3.3}{'':7}{self.user_name:<26.26}{self.user_id:06d}"
            f"{self.description:<12.12}{self.date:6.6}{'':40}"
        )

    def file_total(self, count: int | None = None, credits: int | None = None, debits: int | None = None) -> str:
        credit = sum(d.amount_cents for d in self.details if "50" <= d.code <= "57") if credits is None else credits
        debit = sum(d.amount_cents for d in self.details if d.code == "13") if debits is None else debits
        n = len(self.details) if count is None else count
        return f"7999-999{'':12}{abs(credit - debit):010d}{credit:010d}{debit:010d}{'':24}{n:06d}{'':40}"

    def text(self, **total: int) -> str:
        records = [self.descriptive(), *(d.record() for d in self.details), self.file_total(**total)]
        return "".join(r + "\r\n" for r in records)

"""ISO 20022 pain.002 (customer payment status report, .10 and .03) written as a stream with lxml's xmlfile.

Both versions have the same shape for what remit says: GrpHdr; OrgnlGrpInfAndSts with the group status, its
reason when the file was refused, and the number of transactions per status; then one OrgnlPmtInfAndSts per
original payment-information block holding a TxInfAndSts per transaction. PmtInfSts is left out: it would
need the whole block before its first transaction is written.
"""

from collections.abc import Iterable
from datetime import UTC
from itertools import groupby
from operator import attrgetter
from typing import BinaryIO

from lxml import etree
from lxml.builder import ElementMaker

from app.bankfiles.outcomes import iso_status
from app.bankfiles.status_report import ReportHeader, TransactionStatus, xml_text

MAX_TEXT = 105  # AddtlInf is Max105Text, repeatable
MAX_TEXT_PARTS = 3
ELLIPSIS = " …"  # ends the last part when the text was longer than the parts hold


def write_pain002(sink: BinaryIO, header: ReportHeader, lines: Iterable[TransactionStatus], message: str) -> None:
    """lines must come grouped by payment_information_id (ORDER BY it); a block seen twice is an error."""
    namespace = f"urn:iso:std:iso:20022:tech:xsd:{message}"
    e = ElementMaker(namespace=namespace, nsmap={None: namespace})
    written: set[str] = set()
    with etree.xmlfile(sink, encoding="UTF-8") as xf:
        xf.write_declaration()
        with (
            xf.element(f"{{{namespace}}}Document", nsmap={None: namespace}),
            xf.element(f"{{{namespace}}}CstmrPmtStsRpt"),
        ):
            xf.write(e.GrpHdr(e.MsgId(header.message_id), e.CreDtTm(_timestamp(header))))
            xf.write(_original_group(e, header))
            for block_id, block in groupby(lines, key=attrgetter("payment_information_id")):
                if block_id in written:
                    raise ValueError(f"payment information {block_id!r} comes twice: order the lines by it")
                written.add(block_id)
                with xf.element(f"{{{namespace}}}OrgnlPmtInfAndSts"):
                    xf.write(e.OrgnlPmtInfId(block_id))
                    for line in block:
                        xf.write(_transaction(e, line))
                xf.flush()


def _timestamp(header: ReportHeader) -> str:
    return header.created_at.astimezone(UTC).isoformat(timespec="seconds")


def _original_group(e: ElementMaker, header: ReportHeader) -> etree._Element:
    group = e.OrgnlGrpInfAndSts(e.OrgnlMsgId(header.original_message_id), e.OrgnlMsgNmId(header.original_message_name))
    if header.original_count is not None:
        group.append(e.OrgnlNbOfTxs(str(header.original_count)))
    if header.original_control_sum is not None:
        group.append(e.OrgnlCtrlSum(format(header.original_control_sum, "f")))
    group.append(e.GrpSts(header.group_status))
    if header.refusal is not None:
        group.append(_reason(e, header.refusal.reason, header.refusal.detail))
    for status, count in header.status_counts().items():
        group.append(e.NbOfTxsPerSts(e.DtldNbOfTxs(str(count)), e.DtldSts(status)))
    return group


def _transaction(e: ElementMaker, line: TransactionStatus) -> etree._Element:
    status = iso_status(line.outcome)
    tx = e.TxInfAndSts()
    if line.instruction_id is not None:
        tx.append(e.OrgnlInstrId(line.instruction_id))
    tx.append(e.OrgnlEndToEndId(line.end_to_end_id))
    tx.append(e.TxSts(status.status))
    if status.reason is not None or line.detail:
        tx.append(_reason(e, status.reason, line.detail))
    return tx


def _reason(e: ElementMaker, code: str | None, detail: str | None) -> etree._Element:
    info = e.StsRsnInf()
    if code is not None:
        info.append(e.Rsn(e.Cd(code)))
    for part in addtl_inf_parts(xml_text(detail or "")):
        info.append(e.AddtlInf(part))
    return info


def addtl_inf_parts(text: str) -> list[str]:
    """`text` as at most MAX_TEXT_PARTS AddtlInf (Max105Text), each cut at the last space that fits, so that the
    parts joined by spaces read as the text: a word is cut only when it is longer than a part. Text past the last
    part is left out after a whole word and an ellipsis says so."""
    parts: list[str] = []
    rest = text.strip()
    while rest and len(parts) < MAX_TEXT_PARTS:
        part, rest = _cut(rest, MAX_TEXT)
        parts.append(part)
    if rest:
        parts[-1] = _cut(parts[-1], MAX_TEXT - len(ELLIPSIS))[0] + ELLIPSIS
    return parts


def _cut(text: str, limit: int) -> tuple[str, str]:
    """(the longest head of `text` of at most `limit` characters that ends before a space, the rest)."""
    if len(text) <= limit:
        return text, ""
    space = text.rfind(" ", 1, limit + 1)  # a space right after the limit's last character still fits
    at = space if space > 0 else limit
    return text[:at].rstrip(), text[at:].lstrip()

"""Read a pain.002 back (tests only): what it says per transaction, and whether the official XSD accepts it."""

from dataclasses import dataclass

from lxml import etree

from app.bankfiles.xml_safety import schema


def xsd_errors(data: bytes, message: str) -> list[str]:
    validator = schema(message)
    if validator.validate(etree.fromstring(data)):
        return []
    return [e.message for e in validator.error_log]


@dataclass(frozen=True, slots=True)
class Pain002:
    original_message_id: str
    group_status: str
    group_reason: str | None
    per_status: dict[str, int]
    transactions: list[tuple[str, str | None, str, str, str | None]]  # PmtInfId, InstrId, EndToEndId, TxSts, Cd


def read_pain002(data: bytes) -> Pain002:
    root = etree.fromstring(data)
    ns = {"p": etree.QName(root).namespace or ""}

    def text(element: etree._Element, path: str) -> str | None:
        found = element.find(path, ns)
        return None if found is None else found.text

    group = root.find("p:CstmrPmtStsRpt/p:OrgnlGrpInfAndSts", ns)
    assert group is not None
    transactions = [
        (
            text(block, "p:OrgnlPmtInfId") or "",
            text(tx, "p:OrgnlInstrId"),
            text(tx, "p:OrgnlEndToEndId") or "",
            text(tx, "p:TxSts") or "",
            text(tx, "p:StsRsnInf/p:Rsn/p:Cd"),
        )
        for block in root.iterfind("p:CstmrPmtStsRpt/p:OrgnlPmtInfAndSts", ns)
        for tx in block.iterfind("p:TxInfAndSts", ns)
    ]
    return Pain002(
        original_message_id=text(group, "p:OrgnlMsgId") or "",
        group_status=text(group, "p:GrpSts") or "",
        group_reason=text(group, "p:StsRsnInf/p:Rsn/p:Cd"),
        per_status={
            text(n, "p:DtldSts") or "": int(text(n, "p:DtldNbOfTxs") or 0)
            for n in group.iterfind("p:NbOfTxsPerSts", ns)
        },
        transactions=transactions,
    )

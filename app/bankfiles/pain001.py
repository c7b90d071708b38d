"""ISO 20022 pain.001 (customer credit transfer initiation, .09 and .03) read as a stream.

Every chunk of the file goes to two parsers (see xml_safety for why two):
- a schema-less one that builds nothing and fails at the first byte that is not well-formed XML, or at a
  DOCTYPE, with its line;
- one validating against the official XSD that yields GrpHdr, PmtInf and CdtTrfTxInf elements as they end;
  each is read, then cleared, and the elements before it are deleted, so the tree never holds more than the
  group header, one PmtInf header and one transaction.
libxml2 reports schema errors only when the document ends, so rows are yielded before the file is known to
be valid: they are provisional until the generator returns. A caller must accept the batch whole or not at
all (the ingest step does: one transaction).

Row numbers are transaction positions (1 = the first CdtTrfTxInf), unique even in a file written on one
line; rejection reasons name the transaction's line.
"""

from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from decimal import Context, Decimal, Inexact, InvalidOperation, Rounded
from typing import Any, BinaryIO

from lxml import etree

from app.bankfiles import pain001_parties as parties
from app.bankfiles.control_totals import totals_disagree
from app.bankfiles.money import AmountError, parse_decimal, to_minor_units, whole_number
from app.bankfiles.pain001_parties import ACCOUNT, AGENT, NodeFinder, PartyError, under
from app.bankfiles.rows import BankRow, FileFacts, Origin, rejected_row
from app.bankfiles.xml_safety import (
    WellFormed,
    mask_values,
    not_well_formed,
    root_element,
    validating_parser,
    well_formed_parser,
)
from app.errors import FileRefused
from app.publisher.bulk_file import ControlTotal

CHUNK_BYTES = 64 * 1024
# The group header, one PmtInf header or one transaction must end within this many bytes of the previous one
# (measured per chunk read, so to within CHUNK_BYTES): it bounds what the tree holds at once. A transaction is
# about 1 KB, but RmtInf/Ustrd may repeat without limit.
MAX_UNIT_BYTES = 1024 * 1024
_NOT_PROVIDED = "NOTPROVIDED"
_MAX_COUNT_DIGITS = 15  # NbOfTxs is a Max15NumericText
_BLOCK_PATHS = {
    "PmtInfId": "id",
    "PmtMtd": "method",
    "NbOfTxs": "count",
    "CtrlSum": "sum",
    **under("DbtrAgt", AGENT),
    **under("DbtrAcct", ACCOUNT),
}
_TX_PATHS = {
    "PmtId/EndToEndId": "end_to_end",
    "PmtId/InstrId": "instruction",
    "Amt/InstdAmt": "instructed",
    "Amt/EqvtAmt/Amt": "equivalent",
    **under("CdtrAgt", AGENT),
    **under("CdtrAcct", ACCOUNT),
}
# All a schema-validating lxml parser says when libxml2 itself gave up; the well-formedness parser has
# already reported anything it could see, so what is left is one of libxml2's limits (nesting depth).
_PARSER_STOPPED = "no element found"
# Sums of up to 10^15 amounts of up to 18 digits, exactly: anything inexact raises instead of rounding.
_EXACT = Context(prec=80, traps=[Inexact, Rounded, InvalidOperation])


@dataclass(slots=True)
class _Block:
    """The PmtInf whose transactions are being read."""

    id: str
    stated_count: int | None
    stated_sum: Decimal | None
    debtor: dict[str, str]
    debtor_errors: list[str]
    count: int = 0
    total: Decimal = Decimal(0)


@dataclass(slots=True)
class _Group:
    message_id: str | None = None
    stated_count: int | None = None
    stated_sum: Decimal | None = None
    count: int = 0
    total: Decimal = Decimal(0)
    currencies: set[str] = field(default_factory=set)
    block_mismatch: FileRefused | None = None  # the first PmtInf whose totals disagree, reported at the end


def read_pain001(stream: BinaryIO, name: str, message: str) -> Generator[BankRow, None, FileFacts]:
    """Rows of a pain.001 file (message is "pain.001.001.09" or "pain.001.001.03")."""
    namespace = f"urn:iso:std:iso:20022:tech:xsd:{message}"
    reader = _Reader(name, namespace)
    guard = well_formed_parser(WellFormed(name))
    validating = validating_parser(message, [f"{{{namespace}}}{t}" for t in ("GrpHdr", "PmtInf", "CdtTrfTxInf")])
    first = True
    while chunk := stream.read(CHUNK_BYTES):
        if first:
            _expect_root(chunk, name, namespace)
            first = False
        _well_formed(guard.feed, chunk, name)
        _valid(validating.feed, chunk, name, message)
        yield from reader.handle(validating.read_events(), len(chunk))
    _well_formed(guard.close, None, name)
    _valid(validating.close, None, name, message)
    yield from reader.handle(validating.read_events(), 0)
    return reader.finish()


def _expect_root(head: bytes, name: str, namespace: str) -> None:
    found, local = root_element(head, name)
    if (found, local) != (namespace, "Document"):
        raise FileRefused(f"{name}: the root element is {{{found}}}{local}, not <Document> in {namespace}")


def _well_formed(step: Any, chunk: bytes | None, name: str) -> None:
    try:
        step() if chunk is None else step(chunk)
    except etree.XMLSyntaxError as exc:
        raise not_well_formed(name, exc) from None


def _valid(step: Any, chunk: bytes | None, name: str, message: str) -> None:
    try:
        step() if chunk is None else step(chunk)
    except etree.XMLSyntaxError as exc:
        if exc.msg == _PARSER_STOPPED:
            raise FileRefused(
                f"{name}: the XML parser stopped before the end of the document (elements nested deeper than "
                "256 levels, or another of libxml2's limits)"
            ) from None
        raise FileRefused(f"{name} does not conform to the {message} schema: {mask_values(exc.msg)}") from None


class _Reader:
    def __init__(self, name: str, namespace: str) -> None:
        self.name = name
        self.namespace = namespace
        self.tx_tag, self.block_tag = f"{{{namespace}}}CdtTrfTxInf", f"{{{namespace}}}PmtInf"
        self.block_nodes = NodeFinder(namespace, _BLOCK_PATHS)
        self.tx_nodes = NodeFinder(namespace, _TX_PATHS)
        self.group = _Group()
        self.block: _Block | None = None
        self.unit_bytes = 0

    def handle(self, events: Iterator[tuple[str, Any]], fed: int) -> Iterator[BankRow]:
        self.unit_bytes += fed
        for _event, element in events:
            tag = element.tag
            if tag == self.tx_tag:
                yield self._transaction(element)
            elif tag == self.block_tag:
                self._end_block()
            else:
                self._group_header(element)
            self.unit_bytes = 0
            _forget(element)
        if self.unit_bytes > MAX_UNIT_BYTES:
            raise FileRefused(
                f"{self.name}: a header or transaction runs past {MAX_UNIT_BYTES} bytes; not a payment file remit reads"
            )

    def finish(self) -> FileFacts:
        g = self.group
        if g.block_mismatch is not None:
            raise g.block_mismatch
        if g.stated_count is not None and g.stated_count != g.count:
            detail = f"GrpHdr/NbOfTxs says {g.stated_count} transactions; the file has {g.count}"
            raise totals_disagree(self.name, detail, "AM19")
        if g.stated_sum is not None and g.stated_sum != g.total:
            detail = f"GrpHdr/CtrlSum says {g.stated_sum}; the transactions' amounts add up to {g.total}"
            raise totals_disagree(self.name, detail, "AM16")
        return FileFacts(g.message_id, g.stated_count, g.stated_sum, self._controls())

    def _controls(self) -> tuple[ControlTotal, ...]:
        # CtrlSum adds amounts across currencies (a checksum); it is a money total only for one currency.
        g = self.group
        if len(g.currencies) != 1 or g.stated_sum is None or g.stated_count is None:
            return ()
        (currency,) = g.currencies
        try:
            return (ControlTotal(currency, g.stated_count, to_minor_units(g.stated_sum, currency)),)
        except AmountError:
            return ()

    def _group_header(self, header: etree._Element) -> None:
        def child(name: str) -> str | None:
            text = header.findtext(f"{{{self.namespace}}}{name}")
            return None if text is None else text.strip()

        self.group.message_id = child("MsgId")
        self.group.stated_count = _count(child("NbOfTxs"))
        self.group.stated_sum = _sum(child("CtrlSum"))

    def _begin_block(self, block: etree._Element) -> _Block:
        nodes, errors = self.block_nodes.nodes(block), []
        debtor: dict[str, str] = {}
        method = parties.text(nodes, "method")
        if method != "TRF":
            errors.append(f"PmtInf/PmtMtd is {method!r}: remit makes credit transfers (TRF) only")
        try:
            debtor["debtor_bsb"] = parties.bsb(nodes, "debtor")
            debtor["debtor_account"] = parties.account(nodes, "debtor")
        except PartyError as exc:
            errors.append(str(exc))
        return _Block(
            id=parties.text(nodes, "id") or "",
            stated_count=_count(parties.text(nodes, "count")),
            stated_sum=_sum(parties.text(nodes, "sum")),
            debtor=debtor,
            debtor_errors=errors,
        )

    def _transaction(self, tx: etree._Element) -> BankRow:
        if self.block is None:
            parent = tx.getparent()
            self.block = self._begin_block(tx if parent is None else parent)  # parent: the PmtInf, always
        block, g = self.block, self.group
        g.count += 1
        block.count += 1
        nodes = self.tx_nodes.nodes(tx)
        end_to_end = parties.text(nodes, "end_to_end") or ""
        origin = Origin(block.id, end_to_end, parties.text(nodes, "instruction"))
        fields: dict[str, Any] = {"payment_reference": end_to_end, **block.debtor}
        errors = list(block.debtor_errors)
        if end_to_end == _NOT_PROVIDED:
            del fields["payment_reference"]  # not a reference: two such rows are not duplicates of each other
            errors.append("EndToEndId is NOTPROVIDED: remit needs a unique EndToEndId (it is the payment_reference)")
        errors += self._amount(nodes, fields, block)
        errors += _creditor(nodes, fields)
        if errors:
            where = f" (transaction at line {tx.sourceline})"
            return rejected_row(g.count, ["; ".join(errors) + where], fields, origin)
        return BankRow(number=g.count, fields=fields, origin=origin)

    def _amount(self, nodes: parties.Nodes, fields: dict[str, Any], block: _Block) -> list[str]:
        instructed = nodes.get("instructed")
        written = instructed if instructed is not None else nodes.get("equivalent")
        try:
            amount = parse_decimal(None if written is None else written.text)
        except AmountError as exc:
            return [str(exc)]
        # CtrlSum adds every amount as written, whatever its currency and whether remit can pay it.
        block.total = _EXACT.add(block.total, amount)
        self.group.total = _EXACT.add(self.group.total, amount)
        currency = (written.get("Ccy") if written is not None else None) or ""
        self.group.currencies.add(currency)
        if instructed is None:
            return ["Amt has no InstdAmt (EqvtAmt, an amount to convert into another currency, is not supported)"]
        fields["currency"] = currency
        try:
            fields["amount_cents"] = to_minor_units(amount, currency)
        except AmountError as exc:
            return [str(exc)]
        return []

    def _end_block(self) -> None:
        block, self.block = self.block, None
        if block is None or self.group.block_mismatch is not None:
            return
        where = f"PmtInf {block.id!r}"
        if block.stated_count is not None and block.stated_count != block.count:
            self.group.block_mismatch = totals_disagree(
                self.name, f"{where} NbOfTxs says {block.stated_count} transactions; it has {block.count}", "AM20"
            )
        elif block.stated_sum is not None and block.stated_sum != block.total:
            self.group.block_mismatch = totals_disagree(
                self.name, f"{where} CtrlSum says {block.stated_sum}; its amounts add up to {block.total}", "AM17"
            )


def _creditor(nodes: parties.Nodes, fields: dict[str, Any]) -> list[str]:
    errors = []
    try:
        fields["creditor_bsb"] = parties.bsb(nodes, "creditor")
    except PartyError as exc:
        errors.append(str(exc))
    try:
        fields["creditor_account"] = parties.account(nodes, "creditor")
    except PartyError as exc:
        errors.append(str(exc))
    return errors


def _forget(element: etree._Element) -> None:
    """Free what has been read: the element's content and everything before it under its parent."""
    element.clear(keep_tail=True)
    parent = element.getparent()
    while parent is not None and element.getprevious() is not None:
        del parent[0]


def _count(text: str | None) -> int | None:
    # The schema (Max15NumericText) refuses anything else; until it has, a wrong count is just unknown. Its
    # length is checked before int() sees it: a count of 5,000 digits is past int()'s limit (ValueError).
    return whole_number(text) if text is not None and len(text) <= _MAX_COUNT_DIGITS else None


def _sum(text: str | None) -> Decimal | None:
    try:
        return None if text is None else parse_decimal(text)
    except AmountError:
        return None

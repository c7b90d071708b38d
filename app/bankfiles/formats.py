"""Which bank-file format a file is, told by its content (the first bytes), never by its name."""

import re
from enum import StrEnum

from app.bankfiles.xml_safety import root_element
from app.errors import FileRefused, UsageError

SNIFF_BYTES = 64 * 1024
UTF8_BOM = b"\xef\xbb\xbf"


class BankFormat(StrEnum):
    CSV = "csv"
    JSONL = "jsonl"
    PAIN_001_09 = "pain.001.001.09"
    PAIN_001_03 = "pain.001.001.03"
    ABA = "aba"


FORMAT_NAMES = ", ".join(f.value for f in BankFormat)
PAIN_001_NAMESPACES = {f"urn:iso:std:iso:20022:tech:xsd:{f.value}": f for f in BankFormat if f.value.startswith("pain")}
# Type 0 record: "0", 17 characters (blank, or a BSB and account for some banks), reel "01", bank abbreviation.
_ABA_DESCRIPTIVE = re.compile(rb"^0[ -~]{17}[0-9]{2}[A-Z]{3}")
# Refused before any reader sees them: each gets its own explanation instead of "unknown format".
_NOT_UTF8 = {
    b"\xff\xfe\x00\x00": "UTF-32",
    b"\x00\x00\xfe\xff": "UTF-32",
    b"\xff\xfe": "UTF-16",
    b"\xfe\xff": "UTF-16",
}
_ARCHIVES = {b"PK\x03\x04": "a ZIP archive", b"\x1f\x8b": "a gzip archive"}


def parse_format(name: str) -> BankFormat:
    """The format named by an override (--format, ?format=)."""
    try:
        return BankFormat(name.strip().lower())
    except ValueError:
        raise UsageError(f"unknown format {name!r}: remit reads {FORMAT_NAMES}") from None


def check_readable(head: bytes, name: str) -> None:
    """Refuse what no reader can take, whatever format was named: empty, binary, UTF-16/32, archives."""
    for mark, encoding in _NOT_UTF8.items():
        if head.startswith(mark):
            raise FileRefused(f"{name} is {encoding} text; remit reads UTF-8 (ISO 20022 and ABA files are UTF-8/ASCII)")
    for magic, what in _ARCHIVES.items():
        if head.startswith(magic):
            raise FileRefused(f"{name} is {what}; extract the payment file and submit that")
    if not head.removeprefix(UTF8_BOM).strip():
        raise FileRefused(f"{name} is empty")
    if b"\x00" in head:
        raise FileRefused(f"{name} is binary (it contains NUL bytes), not a payment file")


def detect_format(head: bytes, name: str) -> BankFormat:
    """The format of a file from its first bytes (at most SNIFF_BYTES)."""
    check_readable(head, name)
    text = head.removeprefix(UTF8_BOM).lstrip()
    if text.startswith(b"<"):
        return _xml_format(text, name)
    if text.startswith(b"{"):
        return BankFormat.JSONL
    if _ABA_DESCRIPTIVE.match(text):
        return BankFormat.ABA
    if b"," in text.split(b"\n", 1)[0]:
        return BankFormat.CSV
    raise FileRefused(
        f"cannot tell the format of {name} from its content: remit reads {FORMAT_NAMES}. "
        "Name the format explicitly if the file is one of them."
    )


def _xml_format(head: bytes, name: str) -> BankFormat:
    namespace, local = root_element(head, name)
    found = PAIN_001_NAMESPACES.get(namespace or "")
    if found is None or local != "Document":
        raise FileRefused(
            f"{name} is an XML document <{local}> in namespace {namespace or '(none)'}; remit reads ISO 20022 "
            f"{BankFormat.PAIN_001_09} and {BankFormat.PAIN_001_03} (<Document> in urn:iso:std:iso:20022:tech:xsd:...)"
        )
    return found

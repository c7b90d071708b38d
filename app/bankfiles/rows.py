"""What a bank-file reader hands on: rows in the shape validation takes, and what the file says about itself."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from app.publisher.bulk_file import ControlTotal, RawRow

# validation.py turns a row carrying this key into a rejection with the value as its reason; the row's other
# fields (reference, currency, amount) stay, so the rejection still says which payment it was.
PARSE_ERROR = "__parse_error__"


@dataclass(frozen=True, slots=True)
class Origin:
    """The original references of a pain.001 transaction, which its pain.002 status line must repeat."""

    payment_information_id: str
    end_to_end_id: str
    instruction_id: str | None = None


@dataclass(frozen=True, slots=True)
class BankRow(RawRow):
    """A RawRow (validation takes it unchanged) plus the references a status report needs."""

    origin: Origin | None = None


def rejected_row(number: int, reasons: list[str], fields: Mapping[str, Any], origin: Origin | None = None) -> BankRow:
    """A row the reader already knows is wrong: validation rejects it with these reasons and its line number."""
    return BankRow(number=number, fields={**fields, PARSE_ERROR: "; ".join(reasons)}, origin=origin)


@dataclass(frozen=True, slots=True)
class FileFacts:
    """What a format reader learned from the file itself once it reached the end without refusing it."""

    identity: str | None = None  # the file's own id (pain.001 GrpHdr/MsgId); None: its SHA-256 is its identity
    stated_count: int | None = None  # transactions the file says it holds (NbOfTxs, the ABA trailer's count)
    stated_sum: Decimal | None = None  # pain.001 CtrlSum: a checksum of the amounts as written, not money
    controls: tuple[ControlTotal, ...] = field(default=())  # stated totals per currency, where unambiguous


@dataclass(frozen=True, slots=True)
class FileSummary:
    """A bank file read to its end: its identity for duplicate detection and its stated totals."""

    name: str
    format: str
    identity: str  # pain.001: GrpHdr/MsgId; every other format: the SHA-256 of the file's bytes
    sha256: str
    rows: int  # rows yielded, rejected ones included
    stated_count: int | None
    stated_sum: Decimal | None
    controls: tuple[ControlTotal, ...]

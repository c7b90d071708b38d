"""What a status report holds: its header (the original file, the group status) and one line per transaction."""

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from enum import StrEnum

from app.bankfiles.outcomes import PDNG, RJCT, Outcome, iso_status

MAX_ID = 35  # ISO Max35Text: every identifier in a pain.002
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


class ReportForm(StrEnum):
    PAIN_002_10 = "pain.002.001.10"
    PAIN_002_03 = "pain.002.001.03"
    CSV = "csv"
    JSON = "json"


@dataclass(frozen=True, slots=True)
class TransactionStatus:
    payment_information_id: str  # OrgnlPmtInfId
    end_to_end_id: str  # OrgnlEndToEndId: remit's payment_reference
    outcome: Outcome
    instruction_id: str | None = None  # OrgnlInstrId
    detail: str | None = None  # AddtlInf: the reason in words, never an account number


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a whole file was refused: an ISO reason code (FileRefused.iso_code) and the words."""

    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class ReportHeader:
    message_id: str  # this report's own MsgId
    created_at: datetime
    original_message_id: str  # the pain.001's GrpHdr/MsgId (or the batch id of a CSV/ABA file)
    original_message_name: str  # pain.001.001.09, pain.001.001.03, or remit's name of the format
    counts: Mapping[Outcome, int] = field(default_factory=dict)  # of the transactions that will follow
    original_count: int | None = None
    original_control_sum: Decimal | None = None
    refusal: Refusal | None = None

    def status_counts(self) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for outcome, n in self.counts.items():
            counts[iso_status(outcome).status] += n
        return {status: n for status, n in sorted(counts.items()) if n}

    @property
    def group_status(self) -> str:
        statuses = set(self.status_counts())
        if self.refusal is not None:
            return RJCT
        if not statuses:
            raise ValueError("a status report with no transaction must carry the refusal of the file")
        if PDNG in statuses:
            return PDNG
        return statuses.pop() if len(statuses) == 1 else "PART"


def checked(header: ReportHeader, lines: Iterable[TransactionStatus]) -> Iterator[TransactionStatus]:
    """The lines, each checked; at the end, their outcomes must be the counts the header announced."""
    seen: Counter[Outcome] = Counter()
    for line in lines:
        for name in ("payment_information_id", "end_to_end_id", "instruction_id"):
            value = getattr(line, name)
            if value is not None and not 0 < len(value) <= MAX_ID:
                raise ValueError(f"{name} must be 1 to {MAX_ID} characters for a status report")
        seen[line.outcome] += 1
        yield line
    announced = {k: v for k, v in header.counts.items() if v}
    if dict(seen) != announced:
        raise ValueError(f"the report header announced {announced} but the transactions were {dict(seen)}")


def xml_text(text: str) -> str:
    """Text an XML document can hold: control characters and lone surrogates dropped."""
    return _NOT_XML.sub("", text)

"""Commands (imperative) and events (past tense) of the publishing side."""

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from app.publisher.bulk_file import ControlTotal
from app.publisher.validation import Rejection


@dataclass(frozen=True, slots=True)
class SubmitBatch:
    tenant_id: str
    path: Path
    correlation_id: str | None = None
    allow_resubmit: bool = False
    bank_format: str | None = None  # None: told by the file's content (app/bankfiles/formats.py)


@dataclass(frozen=True, slots=True)
class IngestProgress:
    rows: int  # read so far, rejected ones included
    bytes_read: int
    total_bytes: int


OnProgress = Callable[[IngestProgress], None]


@dataclass(frozen=True, slots=True)
class CurrencyTotal:
    currency: str
    count: int
    amount_cents: int


@dataclass(frozen=True, slots=True)
class BatchAccepted:
    tenant_id: str
    correlation_id: str
    accepted: int
    rejected_count: int
    rejections: list[Rejection]  # the first Settings.ingest_rejections_listed of them, in file order
    totals: list[CurrencyTotal]
    controls: list[ControlTotal] = field(default_factory=list)
    source_format: str = ""

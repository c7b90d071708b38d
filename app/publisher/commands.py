"""Commands (imperative) and events (past tense) of the publishing side."""

from dataclasses import dataclass, field
from pathlib import Path

from app.publisher.validation import ControlTotal, Rejection


@dataclass(frozen=True, slots=True)
class SubmitBatch:
    tenant_id: str
    path: Path
    correlation_id: str | None = None
    allow_resubmit: bool = False


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
    rejections: list[Rejection]
    totals: list[CurrencyTotal]
    controls: list[ControlTotal] = field(default_factory=list)

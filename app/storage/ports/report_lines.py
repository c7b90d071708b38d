"""What became of each row of a batch's file, line by line, as its status report (pain.002, CSV, JSON) tells it:
accepted rows by the ledger and the payment's latest dead letter, rows rejected at ingress by the outcome
validation gave them."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class LineKind:
    """What decides a line's outcome (app/reporting/delivery_outcomes.py)."""

    booked: bool
    dl_status: str | None  # of the payment's latest dead letter of its own tenant; None when it has none
    dl_reason: str | None
    dl_error: str | None  # that dead letter's error type
    rejected_as: str | None  # a row rejected at ingress: the outcome validation gave it; None for accepted rows


@dataclass(frozen=True, slots=True)
class ReportLine:
    kind: LineKind
    row_number: int | None  # the row's line (or position) in its file; None for payments from before 0012
    seq: int | None  # an accepted payment's position in its batch; None for rejected rows
    block: str | None  # pain.001 PmtInf/PmtInfId
    instruction: str | None  # pain.001 PmtId/InstrId
    reference: str | None
    dl_detail: str | None  # the latest dead letter's error message
    errors: list[str] | None  # a rejected row's validation errors


class ReportLines(Protocol):
    async def collect(self, correlation_id: str) -> dict[LineKind, int]:
        """Gather a line for each row of the batch's file as of now, kept for the rest of the unit of work, so
        that the counts and the lines come from one moment; how many lines there are of each kind."""
        ...

    async def each(self, consume: Callable[[Iterator[ReportLine]], None]) -> None:
        """Hand the gathered lines to `consume` in file order, fetched a few thousand at a time (a million lines
        take the memory of a few thousand). `consume` runs synchronously and may block: it writes the report."""
        ...

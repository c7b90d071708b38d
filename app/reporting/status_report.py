"""A batch's status report (ISO 20022 pain.002, CSV or JSON): what became of each row of the file it came from.

Accepted rows are told by the ledger (booked) and their latest dead letter (held for review while it is open,
rejected once discarded, expired); rows rejected at ingress keep the outcome validation gave them. The lines
are first collected (app/storage/ports/report_lines.py), so that the counts the report's header announces and
the lines that follow come from one moment, then streamed into the sink: a million lines take the memory of a
few thousand.
"""

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import BinaryIO, TypeGuard

from uuid6 import uuid7

from app.bankfiles import Outcome, ReportForm, ReportHeader, TransactionStatus, write_status_report
from app.bankfiles.formats import BankFormat
from app.bankfiles.status_report import MAX_ID, xml_text
from app.errors import BatchNotFound, UsageError
from app.reporting.delivery_outcomes import delivery_outcome
from app.storage.ports.batch_reports import BatchRecord
from app.storage.ports.report_lines import LineKind, ReportLine
from app.storage.unit_of_work import UnitOfWorkFactory

_NOT_PROVIDED = "NOTPROVIDED"  # ISO's word for a missing EndToEndId


class ReportChoice(StrEnum):
    """What a caller asks for: "pain.002" answers in the version that matches the original pain.001."""

    PAIN_002 = "pain.002"
    PAIN_002_10 = "pain.002.001.10"
    PAIN_002_03 = "pain.002.001.03"
    CSV = "csv"
    JSON = "json"


CHOICES = ", ".join(c.value for c in ReportChoice)
# media type and file suffix of each form; both pain.002 versions are XML
_FILES = {ReportForm.CSV: ("text/csv", "csv"), ReportForm.JSON: ("application/json", "json")}


def report_choice(name: str) -> ReportChoice:
    try:
        return ReportChoice(name.strip().lower())
    except ValueError:
        raise UsageError(f"unknown report format {name!r}: remit writes {CHOICES}") from None


@dataclass(frozen=True, slots=True)
class BatchReport:
    correlation_id: str
    form: ReportForm
    header: ReportHeader

    @property
    def media_type(self) -> str:
        return _FILES.get(self.form, ("application/xml", ""))[0]

    @property
    def file_name(self) -> str:
        if self.form in _FILES:
            return f"{self.correlation_id}.status.{_FILES[self.form][1]}"
        return f"{self.correlation_id}.{self.form.value}.xml"


async def write_batch_report(
    uow_factory: UnitOfWorkFactory,
    scope: str | None,
    correlation_id: str,
    choice: ReportChoice,
    sink: BinaryIO,
    now: datetime,
) -> BatchReport:
    """Write the report of a batch of `scope`'s tenant (None: any tenant) into the sink."""
    async with uow_factory(scope) as uow:
        found = await uow.batch_reports.batches([correlation_id], scope)
        if not found:
            raise BatchNotFound(f"no batch {correlation_id!r}")
        batch = found[0]
        counts: Counter[Outcome] = Counter()
        for kind, n in (await uow.report_lines.collect(correlation_id)).items():
            counts[_outcome(kind)] += n
        report = BatchReport(correlation_id, _form(choice, batch.source_format), _header(batch, counts, now))
        block = _short(batch)
        await uow.report_lines.each(
            lambda lines: write_status_report(sink, report.header, _statuses(lines, block), report.form)
        )
    return report


def _form(choice: ReportChoice, source_format: str | None) -> ReportForm:
    if choice is ReportChoice.PAIN_002:
        return ReportForm.PAIN_002_03 if source_format == BankFormat.PAIN_001_03 else ReportForm.PAIN_002_10
    return ReportForm(choice.value)


def _header(batch: BatchRecord, counts: Counter[Outcome], now: datetime) -> ReportHeader:
    is_pain_001 = (batch.source_format or "").startswith("pain.001")
    return ReportHeader(
        message_id=uuid7().hex,
        created_at=now,
        original_message_id=batch.source_identity if is_pain_001 and batch.source_identity else _short(batch),
        original_message_name=batch.source_format or "remit-bulk",  # batches from before formats were recorded
        counts=dict(counts),
        original_count=batch.stated_count if batch.stated_count is not None else sum(counts.values()),
        original_control_sum=batch.stated_sum,
    )


def _statuses(lines: Iterator[ReportLine], block: str) -> Iterator[TransactionStatus]:
    for line in lines:
        reference = line.reference if _is_end_to_end_id(line.reference) else _NOT_PROVIDED
        detail = _detail(line)
        if reference == _NOT_PROVIDED and line.row_number is not None:
            detail = f"row {line.row_number}: {detail}"
        yield TransactionStatus(
            payment_information_id=line.block or block,
            end_to_end_id=reference,
            outcome=_outcome(line.kind),
            instruction_id=line.instruction,
            detail=detail,
        )


def _outcome(kind: LineKind) -> Outcome:
    if kind.rejected_as is not None:
        return Outcome(kind.rejected_as)
    return delivery_outcome(kind.booked, kind.dl_status, kind.dl_reason, kind.dl_error)


def _detail(line: ReportLine) -> str | None:
    kind = line.kind
    if kind.rejected_as is not None:
        return "; ".join(line.errors or [])
    if kind.booked or kind.dl_status is None:
        return None
    if _outcome(kind) is Outcome.HELD_FOR_REVIEW:
        return f"held for review ({kind.dl_reason}): {line.dl_detail or ''}".rstrip(": ")
    return line.dl_detail


def _is_end_to_end_id(reference: str | None) -> TypeGuard[str]:
    """Whether a row's reference can stand as its OrgnlEndToEndId (ISO Max35Text, text XML can hold)."""
    return (
        reference is not None
        and reference.strip() != ""
        and len(reference) <= MAX_ID
        and xml_text(reference) == reference
    )


def _short(batch: BatchRecord) -> str:
    """The batch id as an ISO identifier (Max35Text): whole when it fits; else without the bulk_<tenant>_
    prefix (the report goes to that tenant), and at worst its last 35 characters, which hold its random part."""
    correlation_id = batch.correlation_id
    if len(correlation_id) > MAX_ID:
        correlation_id = correlation_id.removeprefix(f"bulk_{batch.tenant_id}_")
    return correlation_id[-MAX_ID:]

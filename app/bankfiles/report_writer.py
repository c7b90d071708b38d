"""Write a batch's status report, per original transaction: ISO 20022 pain.002 (.10, .03), CSV or JSON.

The caller gives the header (with how many transactions of each outcome will follow: the group status comes
first in every form) and the transactions as an iterable in payment-information order, typically straight
from a database cursor; nothing is collected, so a million lines take the memory of one.
"""

import csv
import json
from collections.abc import Iterable
from typing import Any, BinaryIO

from app.bankfiles.outcomes import iso_status
from app.bankfiles.pain002 import write_pain002
from app.bankfiles.status_report import ReportForm, ReportHeader, TransactionStatus, checked
from app.bankfiles.streams import text_of


def write_status_report(
    sink: BinaryIO, header: ReportHeader, lines: Iterable[TransactionStatus], form: ReportForm
) -> None:
    """Write the report to a binary sink; a ValueError means the caller's data was inconsistent (the sink then
    holds a partial report, to be discarded)."""
    if form in (ReportForm.PAIN_002_10, ReportForm.PAIN_002_03):
        write_pain002(sink, header, checked(header, lines), form.value)
    elif form is ReportForm.CSV:
        _write_csv(sink, header, checked(header, lines))
    else:
        _write_json(sink, header, checked(header, lines))


CSV_COLUMNS = (
    "level",
    "original_message_id",
    "payment_information_id",
    "instruction_id",
    "end_to_end_id",
    "status",
    "reason",
    "outcome",
    "detail",
)


def _write_csv(sink: BinaryIO, header: ReportHeader, lines: Iterable[TransactionStatus]) -> None:
    # One "group" row first (the file's status, or why it was refused), then one row per transaction.
    with text_of(sink, "utf-8", newline="") as text:
        writer = csv.writer(text)
        writer.writerow(CSV_COLUMNS)
        refusal = header.refusal
        writer.writerow(
            [
                "group",
                header.original_message_id,
                "",
                "",
                "",
                header.group_status,
                refusal.reason if refusal else "",
                "",
                refusal.detail if refusal else "",
            ]
        )
        for line in lines:
            status = iso_status(line.outcome)
            writer.writerow(
                [
                    "transaction",
                    header.original_message_id,
                    line.payment_information_id,
                    line.instruction_id or "",
                    line.end_to_end_id,
                    status.status,
                    status.reason or "",
                    line.outcome.value,
                    line.detail or "",
                ]
            )


def _write_json(sink: BinaryIO, header: ReportHeader, lines: Iterable[TransactionStatus]) -> None:
    head = json.dumps(_json_header(header))
    sink.write(head[:-1].encode() + b', "transactions": [')
    for n, line in enumerate(lines):
        status = iso_status(line.outcome)
        item = {
            "payment_information_id": line.payment_information_id,
            "instruction_id": line.instruction_id,
            "end_to_end_id": line.end_to_end_id,
            "status": status.status,
            "reason": status.reason,
            "outcome": line.outcome.value,
            "detail": line.detail,
        }
        sink.write((", " if n else "").encode() + json.dumps(item).encode())
    sink.write(b"]}\n")


def _json_header(header: ReportHeader) -> dict[str, Any]:
    control_sum = header.original_control_sum
    return {
        "report_id": header.message_id,
        "created_at": header.created_at.isoformat(),
        "original_message_id": header.original_message_id,
        "original_message_name": header.original_message_name,
        "original_count": header.original_count,
        "original_control_sum": None if control_sum is None else format(control_sum, "f"),
        "group_status": header.group_status,
        "group_reason": header.refusal.reason if header.refusal else None,
        "group_detail": header.refusal.detail if header.refusal else None,
        "counts": header.status_counts(),
    }

"""Bank files as banks send them: remit's CSV and JSON Lines, ISO 20022 pain.001 (.09, .03) and ABA in;
ISO 20022 pain.002 (.10, .03), CSV and JSON status reports out. docs/bank-files.md has the mappings."""

from app.bankfiles.formats import BankFormat, detect_format, parse_format
from app.bankfiles.outcomes import Outcome, iso_status
from app.bankfiles.reader import BankFile
from app.bankfiles.report_writer import write_status_report
from app.bankfiles.rows import BankRow, FileSummary, Origin
from app.bankfiles.status_report import Refusal, ReportForm, ReportHeader, TransactionStatus

__all__ = [
    "BankFile",
    "BankFormat",
    "BankRow",
    "FileSummary",
    "Origin",
    "Outcome",
    "Refusal",
    "ReportForm",
    "ReportHeader",
    "TransactionStatus",
    "detect_format",
    "iso_status",
    "parse_format",
    "write_status_report",
]

"""ABA (Cemtex) direct-entry files read record by record.

A detail record (type 1) becomes one row: its BSB and account are the creditor, its trace BSB and account
(where a failed credit is returned: the paying account) the debtor, its lodgement reference the
payment_reference, its amount cents of AUD. Only credits (codes 50-57) are payments remit makes; a debit
(13, such as a self-balancing record) or an unknown code is a rejected row. A malformed detail line is a
rejected row with its line number; the file is refused when its structure is wrong (no descriptive record
first, no file total record last, a record after it) or when the file total record disagrees with the
detail records. The file total is checked once the last record has been read: rows already yielded are
provisional until the generator returns.
"""

import re
from collections.abc import Generator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, BinaryIO

from app.bankfiles.aba_layout import (
    CREDIT_CODES,
    DEBIT_CODE,
    DESCRIPTIVE,
    DESCRIPTIVE_FIELDS,
    DETAIL,
    DETAIL_FIELDS,
    FILE_TOTAL,
    FILE_TOTAL_BSB,
    FILE_TOTAL_FIELDS,
    INDICATORS,
    RECORD_LENGTH,
    cut,
)
from app.bankfiles.control_totals import totals_disagree
from app.bankfiles.rows import BankRow, FileFacts, rejected_row
from app.bankfiles.streams import bounded_lines
from app.errors import FileRefused
from app.publisher.bulk_file import ControlTotal
from contracts.message import PAYMENT_REFERENCE_PATTERN

CURRENCY = "AUD"
_REFERENCE = re.compile(PAYMENT_REFERENCE_PATTERN)


@dataclass(frozen=True, slots=True)
class _Totals:
    count: int
    credits: int
    debits: int

    @property
    def net(self) -> int:
        return abs(self.credits - self.debits)

    def describe(self) -> str:
        return f"{self.count} detail records, credits {self.credits}, debits {self.debits}, net {self.net} cents"


def read_aba(stream: BinaryIO, name: str) -> Generator[BankRow, None, FileFacts]:
    """Rows of an ABA file; latin-1 keeps one byte one character, so positions hold even for stray bytes."""
    reader = _Reader(name)
    for number, line in enumerate(bounded_lines(stream, name, "latin-1"), start=1):
        row = reader.record(number, line.removesuffix("\n").removesuffix("\r"))
        if row is not None:
            yield row
    return reader.finish()


class _Reader:
    def __init__(self, name: str) -> None:
        self.name = name
        self.descriptive_line: int | None = None
        self.total_line: int | None = None
        self.stated: _Totals | None = None
        self.count = self.credits = self.debits = self.credit_count = 0

    def record(self, number: int, record: str) -> BankRow | None:
        if not record.strip():
            return None
        if self.total_line is not None:
            raise FileRefused(
                f"{self.name}: line {number} comes after the file total record (line {self.total_line}); "
                "submit one ABA file at a time"
            )
        kind = record[0]
        if self.descriptive_line is None and kind != DESCRIPTIVE:
            raise FileRefused(f"{self.name}: line {number} is a type {kind!r} record; an ABA file starts with type 0")
        if kind == DESCRIPTIVE:
            self._descriptive(number, record)
        elif kind == FILE_TOTAL:
            self._file_total(number, record)
        elif kind == DETAIL:
            return self._detail(number, record)
        else:
            return rejected_row(number, [f"record type {kind!r} is not 0, 1 or 7"], {})
        return None

    def finish(self) -> FileFacts:
        if self.stated is None:
            raise FileRefused(f"{self.name} has no file total record (type 7) at its end: the file is truncated")
        found = _Totals(self.count, self.credits, self.debits)
        if found != self.stated:
            code = "AM18" if found.count != self.stated.count else "AM10"
            says = f"the file total record (line {self.total_line}) says {self.stated.describe()}"
            raise totals_disagree(self.name, f"{says}; the file has {found.describe()}", code)
        controls = (ControlTotal(CURRENCY, self.credit_count, self.credits),) if self.credit_count else ()
        return FileFacts(stated_count=self.stated.count, controls=controls)

    def _descriptive(self, number: int, record: str) -> None:
        if self.descriptive_line is not None:
            raise FileRefused(f"{self.name}: line {number} is a second descriptive record (type 0)")
        self._whole(number, record, "descriptive record")
        fields = cut(record, DESCRIPTIVE_FIELDS)
        try:
            datetime.strptime(fields["date"], "%d%m%y")  # noqa: DTZ007 - a calendar date, no time of day
        except ValueError:
            where = DESCRIPTIVE_FIELDS["date"].where
            raise FileRefused(f"{self.name}: the processing date ({where}) on line {number} is not DDMMYY") from None
        self.descriptive_line = number

    def _file_total(self, number: int, record: str) -> None:
        self._whole(number, record, "file total record")
        fields = cut(record, FILE_TOTAL_FIELDS)
        if fields["bsb_filler"] != FILE_TOTAL_BSB:
            raise FileRefused(f"{self.name}: the file total record (line {number}) must have 999-999 in positions 2-8")
        numbers = {k: v for k, v in fields.items() if k != "bsb_filler"}
        if not all(_digits(v) for v in numbers.values()):
            raise FileRefused(f"{self.name}: the file total record (line {number}) has totals that are not digits")
        self.stated = _Totals(int(numbers["count"]), int(numbers["credit_total"]), int(numbers["debit_total"]))
        if int(numbers["net_total"]) != self.stated.net:
            raise FileRefused(
                f"{self.name}: the file total record (line {number}) has net total {int(numbers['net_total'])}, "
                f"not credits minus debits ({self.stated.net})",
                "AM10",
            )
        self.total_line = number

    def _whole(self, number: int, record: str, what: str) -> None:
        if len(record) != RECORD_LENGTH or not record.isascii():
            raise FileRefused(
                f"{self.name}: the {what} (line {number}) must be {RECORD_LENGTH} ASCII characters; "
                f"it has {len(record)}"
            )

    def _detail(self, number: int, record: str) -> BankRow:
        fields = cut(record, DETAIL_FIELDS)
        errors = _shape_errors(record, fields)
        self.count += 1
        amount = int(fields["amount"]) if _digits(fields["amount"]) and len(fields["amount"]) == 10 else None
        if amount is None:
            errors.append(f"the amount ({DETAIL_FIELDS['amount'].where}) must be 10 digits of cents")
        code = fields["code"]
        if code in CREDIT_CODES:
            self.credits += amount or 0
            self.credit_count += 1
        elif code == DEBIT_CODE:
            self.debits += amount or 0
            errors.append("transaction code 13 is a debit (such as a self-balancing record): remit makes credits only")
        else:
            errors.append(f"transaction code {code!r} is neither a credit (50-57) nor a debit (13)")
        if len(record) != RECORD_LENGTH:
            return rejected_row(number, errors, {})
        payment = _payment(fields, amount, errors)
        return rejected_row(number, errors, payment) if errors else BankRow(number=number, fields=payment)


def _shape_errors(record: str, fields: dict[str, str]) -> list[str]:
    errors = []
    if len(record) != RECORD_LENGTH:
        errors.append(f"the record is {len(record)} characters long; ABA records are {RECORD_LENGTH}")
    if not record.isascii():
        errors.append("the record has non-ASCII characters; ABA records are ASCII")
    if fields["indicator"] not in INDICATORS:
        errors.append(f"the indicator (position 18) must be blank, N, W, X or Y, not {fields['indicator']!r}")
    if not _digits(fields["withholding_tax"]):
        errors.append(f"the withholding tax ({DETAIL_FIELDS['withholding_tax'].where}) must be digits")
    return errors


def _payment(fields: dict[str, str], amount: int | None, errors: list[str]) -> dict[str, Any]:
    payment: dict[str, Any] = {
        "currency": CURRENCY,
        "creditor_bsb": fields["bsb"],
        "creditor_account": fields["account"].strip(),
        "debtor_bsb": fields["trace_bsb"],
        "debtor_account": fields["trace_account"].strip(),
    }
    if amount is not None:
        payment["amount_cents"] = amount
    reference = payment_reference(fields["lodgement_reference"])
    if reference:
        payment["payment_reference"] = reference
    where = DETAIL_FIELDS["lodgement_reference"].where
    if not reference:
        errors.append(f"the lodgement reference ({where}) is blank; remit uses it as the payment_reference")
    elif not _REFERENCE.match(reference):
        errors.append(
            f"the lodgement reference ({where}) cannot be a payment_reference: it must start with a letter or "
            "digit and hold only letters, digits, blanks, '_', '.', '/' and '-'"
        )
    return payment


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()  # str.isdigit alone takes "²", which latin-1 decodes


def payment_reference(lodgement_reference: str) -> str:
    """The payment_reference of an ABA detail record: its lodgement reference, trimmed, each run of blanks one
    '_' (the contract allows no blanks): "INV 10042" becomes "INV_10042"."""
    return "_".join(lodgement_reference.split())

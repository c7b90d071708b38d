"""remit's own CSV and JSON Lines formats, read line by line (the rules of app/publisher/bulk_file.py). Control
records are the file's stated totals, not payments: control_totals.py keeps them and holds the rows to them."""

import csv
import json
from collections.abc import Generator, Iterator
from typing import BinaryIO

from app.bankfiles.control_totals import ControlRecords
from app.bankfiles.money import MAX_DIGITS, digit_count, too_many_digits
from app.bankfiles.rows import PARSE_ERROR, BankRow, FileFacts
from app.bankfiles.streams import bounded_lines
from app.errors import FileRefused
from app.publisher.bulk_file import header_problem


def read_csv(stream: BinaryIO, name: str) -> Generator[BankRow, None, FileFacts]:
    """One row per CSV record after the header; cells are text, blank cells are left out, blank rows skipped.
    A header that does not name remit's columns refuses the file."""
    lines = 0

    def counted() -> Iterator[str]:  # csv's own line_num is stale once it raises
        nonlocal lines
        for line in bounded_lines(stream, name):
            lines += 1
            yield line

    reader = csv.DictReader(counted())
    controls = ControlRecords(name)
    try:
        # A wrong header would reject every row with the same errors: refuse the file once, saying why.
        if reader.fieldnames and (problem := header_problem([n.strip() for n in reader.fieldnames if n.strip()])):
            raise FileRefused(f"{name}: the CSV header is wrong: {problem}")
        for record in reader:
            fields = {k.strip(): (v.strip() if isinstance(v, str) else v) for k, v in record.items() if k}
            if any(fields.values()):
                kept = {k: v for k, v in fields.items() if v != ""}
                if not controls.record(reader.line_num, kept):
                    yield BankRow(number=reader.line_num, fields=kept, typed=False)
    except csv.Error as exc:
        raise FileRefused(f"{name}: line {lines} is not valid CSV: {exc}") from None
    return controls.facts()


def read_jsonl(stream: BinaryIO, name: str) -> Generator[BankRow, None, FileFacts]:
    """One row per non-blank line; a line that is not a JSON object is a rejected row, not a refused file."""
    controls = ControlRecords(name)
    for number, line in enumerate(bounded_lines(stream, name), start=1):
        if line.strip() and not controls.record(number, fields := _json_object(line)):
            yield BankRow(number=number, fields=fields)
    return controls.facts()


class _LongNumber:
    """What a JSON number of more than MAX_DIGITS digits reads as: its digits counted, never converted."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"<a number of {self.digits} digits>"


def _bounded_int(text: str) -> int | _LongNumber:
    # json hands every integer literal here (digits, perhaps a minus sign) before converting it.
    digits = digit_count(text)
    return int(text) if digits <= MAX_DIGITS else _LongNumber(digits)


def _json_object(line: str) -> dict[str, object]:
    try:
        value = json.loads(line, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        return {PARSE_ERROR: f"not valid JSON: {exc.msg} at column {exc.colno}"}
    except RecursionError:
        return {PARSE_ERROR: "not valid JSON: nested too deeply"}
    if not isinstance(value, dict):
        return {PARSE_ERROR: "each line must be a JSON object"}
    long = {key: v.digits for key, v in value.items() if isinstance(v, _LongNumber)}
    if long:
        # The row keeps its other fields (its reference) for the rejection; the long numbers go.
        kept: dict[str, object] = {key: v for key, v in value.items() if key not in long}
        return {**kept, PARSE_ERROR: "; ".join(too_many_digits(key[:64], n) for key, n in long.items())}
    return value

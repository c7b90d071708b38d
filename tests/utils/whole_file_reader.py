"""The whole-file CSV / JSON Lines reader remit used before app/bankfiles/ read files as streams. Kept as the
oracle the streaming readers are compared with (tests/unit/bankfiles/test_text_formats.py)."""

import csv
import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

from app.errors import UsageError
from app.publisher.bulk_file import RawRow


@dataclass(frozen=True, slots=True)
class BulkFile:
    name: str
    sha256: str
    rows: list[RawRow]


def read_bulk_file(path: Path) -> BulkFile:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}. Check the path and permissions.") from exc
    text = _decode(data, path)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        rows = _csv_rows(text)
    elif suffix in {".jsonl", ".ndjson"}:
        rows = _jsonl_rows(text, path)
    else:
        raise UsageError(f"{path.name}: unknown file type {suffix!r}. Use a .csv or .jsonl bulk file.")
    return BulkFile(name=path.name, sha256=hashlib.sha256(data).hexdigest(), rows=rows)


def _decode(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path.name} is not UTF-8 text (byte {exc.start}). Save it as UTF-8.") from exc


def _csv_rows(text: str) -> list[RawRow]:
    reader = csv.DictReader(io.StringIO(text))
    rows = []
    for record in reader:
        fields = {k.strip(): (v.strip() if isinstance(v, str) else v) for k, v in record.items() if k}
        if any(fields.values()):
            kept = {k: v for k, v in fields.items() if v != ""}
            rows.append(RawRow(number=reader.line_num, fields=kept, typed=False))
    return rows


def _jsonl_rows(text: str, path: Path) -> list[RawRow]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            value = {"__parse_error__": f"not valid JSON: {exc.msg} at column {exc.colno}"}
        if not isinstance(value, dict):
            value = {"__parse_error__": "each line must be a JSON object"}
        rows.append(RawRow(number=number, fields=value))
    return rows

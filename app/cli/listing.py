"""How `remit`'s listing commands print (status, dlq list/stats/audit, trace, reconcile, queues, tenants list):
`--format table|json|csv`, and tables whose values survive any terminal, and no terminal at all.

- **table** (the default), for people. Every column is at least as wide as its longest word, its header's
  included (rich's `min_width`), so no word, and so no id, is ever split or shortened to `b…`; a column of
  one-word values (ids, numbers) does not wrap (`no_wrap`), so rich narrows only the columns that can, between
  words (a time, an amount beside its minor units, a detail, a note). On a terminal the table fits the terminal
  that way; when even that is too wide it is printed as wide as its words need and the terminal folds the
  line: rich never splits an id that a person copies into the next command. Off a terminal (cron, a pipe, a
  log file) every cell is on one line at the table's natural width, whatever COLUMNS says: full values, one
  line per row, for grep. `keep` (values) and `free` (prose) columns differ only in what they say they hold.
- **json**: one JSON document (ids as strings, amounts as integer minor units beside their currency, times in
  ISO 8601). It always passes through app/terminal_text.py, whose escapes are JSON's own: the same values.
- **csv**: a header row and a row per record, written by the csv module. A command that shows several tables
  gives one CSV with a `record` column naming each row's table and the union of their columns. Escaped on a
  terminal; a file or a pipe gets the values as they are (data for a program, as `remit report`'s files).

Text a tenant wrote stays escaped on a terminal as everywhere (app/cli/safe_console.py).
"""

import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

import typer
from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.measure import Measurement
from rich.panel import Panel
from rich.table import Column, Table

from app.errors import UsageError
from app.terminal_text import terminal_safe

UNBOUNDED = 100_000  # columns: wider than any table, so rich measures it unsqueezed


class Format(StrEnum):
    TABLE = "table"
    JSON = "json"
    CSV = "csv"


FORMAT = typer.Option(
    Format.TABLE,
    "--format",
    case_sensitive=False,
    help="table (for people; full values when not on a terminal), json or csv (for programs).",
)
JSON = typer.Option(False, "--json", help="The same as --format json.")


def chosen(fmt: Format, as_json: bool) -> Format:
    """--format, with --json as the older spelling of --format json."""
    if as_json and fmt not in (Format.TABLE, Format.JSON):
        raise UsageError(f"--json and --format {fmt.value} contradict each other: give one of them")
    return Format.JSON if as_json else fmt


# ------------------------------------------------------------------------------------------------ tables


def keep(header: str, justify: Literal["left", "right"] = "left") -> Column:
    """A column of values: ids, batch ids, tenants, states, numbers, times, amounts."""
    return Column(header, justify=justify, overflow="fold")


def number(header: str) -> Column:
    return keep(header, "right")


def free(header: str) -> Column:
    """A column of free text: errors, details, notes."""
    return Column(header, overflow="fold")


def print_table(console: Console, *renderables: RenderableType) -> None:
    """Print by the rules above: on a terminal at least as wide as the values need, elsewhere at full width."""
    for renderable in renderables:
        for table in _tables(renderable):
            _widen(console, table)
        options = console.options.update_width(UNBOUNDED)
        least = _least(console, options, renderable)
        width = max(console.width, least) if console.is_terminal else max(least, _natural(console, renderable))
        with _width(console, width):
            # Not cropped: where rich's fitting leaves a line wider than `width`, the terminal folds it, and no
            # value is lost.
            console.print(renderable, crop=False)


def print_lines(console: Console, *lines: RenderableType) -> None:
    """Lines of prose beside a table: wrapped by rich on a terminal, whole lines elsewhere (one per line, for grep)."""
    for text in lines:
        console.print(text, soft_wrap=not console.is_terminal)


def _tables(renderable: RenderableType) -> Iterator[Table]:
    if isinstance(renderable, Table):
        yield renderable
    elif isinstance(renderable, Group):
        for part in renderable.renderables:
            yield from _tables(part)
    elif isinstance(renderable, Panel):
        yield from _tables(renderable.renderable)


def _widen(console: Console, table: Table) -> None:
    """Each column at least as wide as its longest word, its header's included, so rich never splits a word. A
    column that cannot wrap at all (one word per cell: an id, a number) is marked so: rich's fitting then narrows
    only the columns that can wrap, instead of narrowing the widest first and finding it cannot."""
    options = console.options.update_width(UNBOUNDED)
    for column in table.columns:
        widths = [Measurement.get(console, options, cell) for cell in (column.header, *column.cells)]
        longest_word, longest = max(w.minimum for w in widths), max(w.maximum for w in widths)
        column.min_width = max(column.min_width or 0, longest if column.no_wrap else longest_word)
        column.no_wrap = column.no_wrap or longest_word >= longest


def _least(console: Console, options: ConsoleOptions, renderable: RenderableType) -> int:
    """The narrowest the renderable can be printed without splitting a word (a panel: its content's)."""
    if isinstance(renderable, Group):
        return max((_least(console, options, r) for r in renderable.renderables), default=0)
    if isinstance(renderable, Panel):
        return _least(console, options, renderable.renderable) + 4  # borders and padding
    return Measurement.get(console, options, renderable).minimum


def _natural(console: Console, renderable: RenderableType) -> int:
    return Measurement.get(console, console.options.update_width(UNBOUNDED), renderable).maximum


@contextmanager
def _width(console: Console, width: int) -> Iterator[None]:
    # Console.print(width=...) is capped at the console's width and crops to it: the console itself is widened.
    before = console.width
    console.width = width
    try:
        yield
    finally:
        console.width = before


# ------------------------------------------------------------------------------------------------ json, csv


def plain(value: object) -> object:
    """A value JSON cannot hold as it is: dataclasses as objects, times in ISO 8601, UUIDs and the rest as text."""
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def to_json(value: Any) -> str:
    return json.dumps(value, default=plain, indent=2, ensure_ascii=False)


def print_json(console: Console, document: Any) -> None:
    # Escaped wherever it goes: an escape is JSON's own spelling of the character, so nothing is lost, and a
    # document piped on to a pager or a terminal cannot act on it either.
    _write(console, to_json(document) + "\n", always_safe=True)


def print_csv(console: Console, fields: Sequence[str], records: Iterable[Mapping[str, Any]]) -> None:
    """A header row of `fields` and a row per record (missing fields empty)."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(fields), extrasaction="ignore")
    writer.writeheader()
    writer.writerows({name: csv_cell(value) for name, value in record.items()} for record in records)
    # A CRLF ends a row (the csv module's default, as RFC 4180 has it): kept; line ends inside a cell too.
    _write(console, text.getvalue(), row_end="\r\n")


def csv_cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, default=plain, ensure_ascii=False)
    return str(plain(value))


def records(rows: Iterable[Any]) -> list[dict[str, Any]]:
    """Dataclass rows as dictionaries, for json and csv."""
    return [asdict(row) for row in rows]


def union(*tables: tuple[str, Sequence[str], Sequence[Mapping[str, Any]]]) -> tuple[list[str], list[dict[str, Any]]]:
    """Several tables as one CSV: (name, fields, rows) each. A `record` column names each row's table; every
    field is a column once."""
    fields: dict[str, None] = {"record": None}
    rows: list[dict[str, Any]] = []
    for name, names, table in tables:
        fields.update(dict.fromkeys(names))
        rows += [{"record": name, **row} for row in table]
    return list(fields), rows


def _write(console: Console, text: str, row_end: str = "\n", always_safe: bool = False) -> None:
    """Data for a program; on a terminal (or `always_safe`) with the characters a terminal would obey escaped. CSV
    off a terminal keeps its bytes, as `remit report` does: there it is data for a program, which an escape
    would change."""
    if always_safe or console.is_terminal:
        text = row_end.join(terminal_safe(part) for part in text.split(row_end))
    console.file.write(text)
    console.file.flush()

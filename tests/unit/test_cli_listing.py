"""The listing commands' printer (app/cli/listing.py), on consoles of every width: no id split or cut on a
terminal, full values off one, JSON that stays JSON, CSV the csv module reads back."""

import csv
import io
import json
from datetime import UTC, datetime
from uuid import UUID

import pytest
from rich.table import Table

from app.cli.listing import Format, chosen, free, keep, number, print_csv, print_json, print_table, union
from app.cli.safe_console import SafeConsole
from app.errors import UsageError

MESSAGE_ID = "01a2092e-4bc5-78dd-9914-324715beedd6"
REFERENCE = "PAY-ANZ-2025-00000539"  # 21 characters
BATCH = "bulk_anz_20261123_batch_0001"
DETAIL = "attempt 1 failed (CoreBankingTimeout: core banking timed out for 981-680 ******001); retrying after a delay"


def table() -> Table:
    shown = Table(keep("batch"), keep("reference"), keep("message_id"), number("amount (minor units)"), free("what"))
    for n in range(3):
        shown.add_row(BATCH, REFERENCE, MESSAGE_ID, f"45,05{n}.00 (4,505,{n}00)", DETAIL)
    return shown


def printed(width: int, terminal: bool) -> str:
    out = io.StringIO()
    console = SafeConsole(file=out, width=width, force_terminal=terminal, color_system=None)
    print_table(console, table())
    return out.getvalue()


@pytest.mark.parametrize("width", [40, 80, 120, 160, 250])
def test_on_a_terminal_no_id_is_ever_split_or_cut(width: int) -> None:
    shown = printed(width, terminal=True)
    assert "…" not in shown
    for value in (BATCH, REFERENCE, MESSAGE_ID, "(CoreBankingTimeout:"):
        assert sum(line.count(value) for line in shown.splitlines()) == 3, (width, value, shown)


def test_on_a_wide_enough_terminal_the_table_fits_it_by_wrapping_prose_and_amounts() -> None:
    shown = printed(160, terminal=True)
    assert max(len(line) for line in shown.splitlines()) <= 160
    assert len(shown.splitlines()) > 3 + 4 + 1  # rows of more than one line: the detail wrapped between words


@pytest.mark.parametrize("width", [20, 80, 160])
def test_off_a_terminal_every_row_is_one_line_whatever_the_width(width: int) -> None:
    lines = printed(width, terminal=False).splitlines()
    rows = [line for line in lines if MESSAGE_ID in line]
    assert len(rows) == 3
    assert all(DETAIL in row and REFERENCE in row and "(4,505," in row for row in rows)
    assert len(lines) == 3 + 4  # header and borders, a line per row


def test_json_is_one_document_with_exact_values_and_no_character_a_terminal_obeys() -> None:
    out = io.StringIO()
    document = [
        {
            "message_id": UUID(MESSAGE_ID),
            "amount_cents": 45_050,
            "at": datetime(2026, 1, 2, tzinfo=UTC),
            "reference": "PAY\x1b]0;owned\x07\u202e",
        }
    ]
    print_json(SafeConsole(file=out), document)
    text = out.getvalue()
    assert [c for c in ("\x1b", "\x07", "\u202e") if c in text] == []  # escaped: JSON's own \u001b ...
    assert json.loads(text) == [
        {
            "message_id": MESSAGE_ID,
            "amount_cents": 45_050,
            "at": "2026-01-02T00:00:00+00:00",
            "reference": "PAY\x1b]0;owned\x07\u202e",
        }
    ]


def test_csv_reads_back_with_the_csv_module_and_several_tables_make_one() -> None:
    fields, rows = union(
        ("queue", ["name", "ready"], [{"name": "payments.work.basic", "ready": 3}]),
        (
            "tenant",
            ["tenant_id", "dedicated_queue", "limits"],
            [{"tenant_id": "anz", "dedicated_queue": True, "limits": {"rate": 5}}],
        ),
    )
    out = io.StringIO()
    print_csv(SafeConsole(file=out), fields, rows)
    assert list(csv.DictReader(io.StringIO(out.getvalue(), newline=""))) == [
        {
            "record": "queue",
            "name": "payments.work.basic",
            "ready": "3",
            "tenant_id": "",
            "dedicated_queue": "",
            "limits": "",
        },
        {
            "record": "tenant",
            "name": "",
            "ready": "",
            "tenant_id": "anz",
            "dedicated_queue": "true",
            "limits": '{"rate": 5}',
        },
    ]


def test_json_is_the_older_spelling_of_format_json_and_a_contradiction_is_refused() -> None:
    assert chosen(Format.TABLE, as_json=True) is Format.JSON
    assert chosen(Format.CSV, as_json=False) is Format.CSV
    with pytest.raises(UsageError, match="--json and --format csv contradict each other"):
        chosen(Format.CSV, as_json=True)

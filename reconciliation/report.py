"""Report writers: summary and break detail as CSV and Parquet, and rich tables for the terminal.

Cells wrap between words and fold, never end in an ellipsis. `remit reconcile` prints the tables with the CLI's
listing rules (app/cli/listing.py: no word, so no id, ever split; full values when not on a terminal); this
job's own entry point with a plain console. Amounts are in the currency's unit (contracts/amounts.py) beside
the minor units.
"""

from pathlib import Path
from typing import Literal

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from contracts.amounts import amount_cell
from reconciliation import statuses as st
from reconciliation.result import ReconcileResult

MAX_ROWS_SHOWN = 50
_STATE_STYLE = {st.RECONCILED: "green", st.PENDING: "yellow", st.BREAKS: "bold red"}


def write_table(table: pa.Table, out_dir: Path, name: str) -> None:
    """Same content twice: CSV for people and spreadsheets, Parquet for tools."""
    out_dir.mkdir(parents=True, exist_ok=True)
    pacsv.write_csv(table, out_dir / f"{name}.csv")
    pq.write_table(table, out_dir / f"{name}.parquet")


def write_reports(result: ReconcileResult, breaks: pa.Table, out_dir: Path) -> None:
    write_table(result.summary, out_dir, "summary")
    write_table(breaks, out_dir, "breaks")


_COLUMNS = ("batch", "ccy", "accepted", "amount (minor units)", "over amqp", "processed", "dead_lettered", "expired",
            "in_flight")  # fmt: skip
_LEFT = ("batch", "tenant", "ccy", "status", "payment", "state")
# Three-way runs: booked in both, and the four kinds of break between remit and the core.
_CORE_COLUMNS = {"core booked": "core_booked_count", "core only": "core_only_count",
                 "remit only": "remit_only_count", "core mismatch": "core_mismatch_count",
                 "core twice": "core_duplicate_count"}  # fmt: skip


def _value(header: str) -> Column:
    justify: Literal["left", "right"] = "left" if header in _LEFT else "right"
    return Column(header, justify=justify, overflow="fold")


def summary_table(result: ReconcileResult) -> Table:
    core_columns = _CORE_COLUMNS if result.three_way else {}
    names = (*_COLUMNS, *core_columns, "breaks", "state")
    table = Table(*map(_value, names), title=f"Reconciliation as of {result.as_of.isoformat()}", show_lines=False)
    # Reconciled rows are the quiet majority: show what needs attention first, then fill up to the cap.
    rows = sorted(result.summary.to_pylist(), key=lambda r: -st.BATCH_STATES.index(r["state"]))
    for row in rows[:MAX_ROWS_SHOWN]:
        state = row["state"]
        counts = ("amqp_count", "processed_count", "dead_lettered_count", "expired_count", "in_flight_count",
                  *core_columns.values())  # fmt: skip
        table.add_row(
            # A batch id may be a direct publisher's (a dead letter's correlation_id): Text, never read as markup.
            Text(str(row["correlation_id"])),
            Text(str(row["currency"])),
            f"{row['accepted_count']:,}",
            amount_cell(row["accepted_cents"], row["currency"]),
            *[f"{row[c]:,}" for c in counts],
            # break_count counts the totals' own break (a row of breaks.csv) when they disagree.
            f"{row['break_count']:,}" + ("" if row["totals_ok"] else " incl. totals"),
            Text(state, style=_STATE_STYLE[state]),
        )
    if len(rows) > MAX_ROWS_SHOWN:
        table.caption = f"{len(rows) - MAX_ROWS_SHOWN:,} more rows in summary.csv"
    return table


def breaks_table(result: ReconcileResult) -> Table:
    """Every break, as breaks.csv has it (up to the cap): the batch, currency and what disagrees, whether a message
    or the batch's control totals broke."""
    values = map(_value, ("batch", "tenant", "ccy", "status", "payment", "amount (minor units)"))
    table = Table(*values, Column("detail", overflow="fold"), title="Breaks", show_lines=False)
    for row in result.breaks.to_pylist()[:MAX_ROWS_SHOWN]:
        payment = row["message_id"] or "(the batch's control totals)"
        cells = (row["correlation_id"], row["tenant_id"], row["currency"], row["status"], payment)
        # Text, never markup: a batch id and a tenant's names are text a tenant wrote.
        table.add_row(
            *(Text(str(c or "")) for c in cells),
            amount_cell(row["amount_cents"], row["currency"]),
            Text(str(row["detail"] or "")),
        )
    if result.breaks.num_rows > MAX_ROWS_SHOWN:
        table.caption = f"{result.breaks.num_rows - MAX_ROWS_SHOWN:,} more in breaks.csv"
    return table


def outcome_line(result: ReconcileResult, out_dir: Path) -> Text:
    outcome = result.result
    # Styles as Text, not markup: remit prints with a console that parses none, since a batch id (a direct
    # publisher's correlation_id, in a dead letter) is text a tenant wrote.
    return Text.assemble(
        (outcome, _STATE_STYLE[outcome]),
        f": {result.message_count:,} messages, "
        f"{result.breaks.num_rows:,} breaks; batches: {result.batches_in(st.BREAKS):,} with breaks, "
        f"{result.batches_in(st.PENDING):,} pending; reports in {out_dir}",
    )


def print_report(console: Console, result: ReconcileResult, out_dir: Path) -> None:
    console.print(summary_table(result))
    if result.breaks.num_rows:
        console.print(breaks_table(result))
    print_notes(console, result, out_dir)


def print_notes(console: Console, result: ReconcileResult, out_dir: Path) -> None:
    for note in notes(result, out_dir):
        console.print(note)


def notes(result: ReconcileResult, out_dir: Path) -> list[Text]:
    """What the tables leave out: the outcome in one line, the core's journal, what to do about PENDING."""
    said = [outcome_line(result, out_dir)]
    if result.three_way:
        core_rows = result.input_counts.get("core_journal", 0)
        foreign = result.input_counts.get("core_journal_foreign", 0)
        awaited = result.input_counts.get("core_journal_awaited", 0)
        said.append(
            Text(
                f"core journal: {core_rows:,} transfers of remit's compared"
                + (f", {foreign:,} of other channels left out" if foreign else "")
            )
        )
        if awaited:
            said.append(
                Text(
                    f"{awaited:,} transfers remit recorded were still held back by the core's export (a long "
                    "transaction on its database server): reported as remit_only; rerun later",
                    style="yellow",
                )
            )
    if result.result == st.PENDING:
        said.append(Text("PENDING: messages still inside TTL + grace; rerun later to close them.", style="yellow"))
    return said

"""Report writers: summary and break detail as CSV and Parquet, and a rich table for the terminal."""

from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table
from rich.text import Text

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


_COLUMNS = ("batch", "ccy", "accepted", "accepted cents", "over amqp", "processed", "dead_lettered", "expired",
            "in_flight")  # fmt: skip
# Three-way runs: booked in both, and the four kinds of break between remit and the core.
_CORE_COLUMNS = {"core booked": "core_booked_count", "core only": "core_only_count",
                 "remit only": "remit_only_count", "core mismatch": "core_mismatch_count",
                 "core twice": "core_duplicate_count"}  # fmt: skip


def _summary_table(result: ReconcileResult) -> Table:
    table = Table(title=f"Reconciliation as of {result.as_of.isoformat()}", show_lines=False)
    core_columns = _CORE_COLUMNS if result.three_way else {}
    for name in (*_COLUMNS, *core_columns):
        table.add_column(name, justify="left" if name in ("batch", "ccy") else "right")
    table.add_column("breaks", justify="right")
    table.add_column("state")
    # Reconciled rows are the quiet majority: show what needs attention first, then fill up to the cap.
    rows = sorted(result.summary.to_pylist(), key=lambda r: -st.BATCH_STATES.index(r["state"]))
    for row in rows[:MAX_ROWS_SHOWN]:
        state = row["state"]
        counts = ("accepted_count", "accepted_cents", "amqp_count", "processed_count", "dead_lettered_count",
                  "expired_count", "in_flight_count", *core_columns.values())  # fmt: skip
        table.add_row(
            # A batch id may be a direct publisher's (a dead letter's correlation_id): Text, never read as markup.
            Text(str(row["correlation_id"])),
            Text(str(row["currency"])),
            *[f"{row[c]:,}" for c in counts],
            # break_count counts the totals' own break (a row of breaks.csv) when they disagree.
            f"{row['break_count']:,}" + ("" if row["totals_ok"] else " incl. totals"),
            Text(state, style=_STATE_STYLE[state]),
        )
    if len(rows) > MAX_ROWS_SHOWN:
        table.caption = f"{len(rows) - MAX_ROWS_SHOWN:,} more rows in summary.csv"
    return table


def _breaks_table(result: ReconcileResult) -> Table:
    """Every break, as breaks.csv has it (up to the cap): the batch, currency and what disagrees, whether a message
    or the batch's control totals broke."""
    table = Table(title="Breaks", show_lines=False)
    for name in ("batch", "tenant", "ccy", "status", "payment", "cents", "detail"):
        table.add_column(name, justify="right" if name == "cents" else "left", no_wrap=name != "detail")
    for row in result.breaks.to_pylist()[:MAX_ROWS_SHOWN]:
        payment = row["message_id"] or "(the batch's control totals)"
        cells = (row["correlation_id"], row["tenant_id"], row["currency"], row["status"], payment)
        # Text, never markup: a batch id and a tenant's names are text a tenant wrote.
        table.add_row(*(Text(str(c or "")) for c in cells), f"{row['amount_cents']:,}", Text(str(row["detail"] or "")))
    if result.breaks.num_rows > MAX_ROWS_SHOWN:
        table.caption = f"{result.breaks.num_rows - MAX_ROWS_SHOWN:,} more in breaks.csv"
    return table


def print_report(console: Console, result: ReconcileResult, out_dir: Path) -> None:
    console.print(_summary_table(result))
    if result.breaks.num_rows:
        console.print(_breaks_table(result))
    outcome = result.result
    # Styles as Text, not markup: remit prints with a console that parses none, since a batch id (a direct
    # publisher's correlation_id, in a dead letter) is text a tenant wrote.
    console.print(
        Text.assemble(
            (outcome, _STATE_STYLE[outcome]),
            f": {result.message_count:,} messages, "
            f"{result.breaks.num_rows:,} breaks; batches: {result.batches_in(st.BREAKS):,} with breaks, "
            f"{result.batches_in(st.PENDING):,} pending; reports in {out_dir}",
        )
    )
    if result.three_way:
        core_rows = result.input_counts.get("core_journal", 0)
        foreign = result.input_counts.get("core_journal_foreign", 0)
        awaited = result.input_counts.get("core_journal_awaited", 0)
        console.print(
            f"core journal: {core_rows:,} transfers of remit's compared"
            + (f", {foreign:,} of other channels left out" if foreign else "")
        )
        if awaited:
            console.print(
                Text(
                    f"{awaited:,} transfers remit recorded were still held back by the core's export (a long "
                    "transaction on its database server): reported as remit_only; rerun later",
                    style="yellow",
                )
            )
    if outcome == st.PENDING:
        console.print(Text("PENDING: messages still inside TTL + grace; rerun later to close them.", style="yellow"))

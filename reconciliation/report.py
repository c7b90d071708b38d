"""Report writers: summary and break detail as CSV and Parquet, and a rich table for the terminal."""

from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

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


def _summary_table(result: ReconcileResult) -> Table:
    table = Table(title=f"Reconciliation as of {result.as_of.isoformat()}", show_lines=False)
    for name in ("batch", "ccy", "accepted", "accepted cents", "processed", "dead_lettered", "expired", "in_flight"):
        table.add_column(name, justify="left" if name in ("batch", "ccy") else "right")
    table.add_column("breaks", justify="right")
    table.add_column("state")
    # Reconciled rows are the quiet majority: show what needs attention first, then fill up to the cap.
    rows = sorted(result.summary.to_pylist(), key=lambda r: -st.BATCH_STATES.index(r["state"]))
    for row in rows[:MAX_ROWS_SHOWN]:
        state = row["state"]
        table.add_row(
            str(row["correlation_id"]),
            str(row["currency"]),
            f"{row['accepted_count']:,}",
            f"{row['accepted_cents']:,}",
            f"{row['processed_count']:,}",
            f"{row['dead_lettered_count']:,}",
            f"{row['expired_count']:,}",
            f"{row['in_flight_count']:,}",
            f"{row['break_count']:,}" + ("" if row["totals_ok"] else " +totals"),
            f"[{_STATE_STYLE[state]}]{state}[/]",
        )
    if len(rows) > MAX_ROWS_SHOWN:
        table.caption = f"{len(rows) - MAX_ROWS_SHOWN:,} more rows in summary.csv"
    return table


def print_report(console: Console, result: ReconcileResult, out_dir: Path) -> None:
    console.print(_summary_table(result))
    outcome = result.result
    console.print(
        f"[{_STATE_STYLE[outcome]}]{outcome}[/]: {result.message_count:,} messages, "
        f"{result.breaks.num_rows:,} breaks; batches: {result.batches_in(st.BREAKS):,} with breaks, "
        f"{result.batches_in(st.PENDING):,} pending; reports in {out_dir}"
    )
    if outcome == st.PENDING:
        console.print("[yellow]PENDING: messages still inside TTL + grace; rerun later to close them.[/]")

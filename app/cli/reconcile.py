"""`remit reconcile`: the nightly reconciliation, run in-process (Spark local mode by default)."""

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from reconciliation import job
from reconciliation import statuses as st
from reconciliation.config import DEFAULT_GRACE_MINUTES, RunConfig, parse_as_of, resolve_database_url
from reconciliation.report import print_report


def reconcile_command(
    as_of: str = typer.Option(..., "--as-of", help="Reconcile as of this time: ISO 8601 with offset, or 'now'."),
    out: Path = typer.Option(..., "--out", help="Report directory: summary.csv/.parquet, breaks.*, snapshot/."),
    master: str = typer.Option("local[*]", "--master", help="Spark master URL, passed through unchanged."),
    grace_minutes: int = typer.Option(
        DEFAULT_GRACE_MINUTES, "--grace-minutes", min=0, help="Minutes after TTL before in-flight turns missing."
    ),
    database_url: str | None = typer.Option(
        None, "--database-url", help="PostgreSQL URL (default: env REMIT_DATABASE_URL).", show_default=False
    ),
    snapshot: Path | None = typer.Option(
        None, "--snapshot", help="Reconcile an existing snapshot directory instead of exporting one."
    ),
) -> None:
    """Reconcile every batch: accepted = processed + dead-lettered + expired + in flight, money moved once.

    Example:

    \b
      remit reconcile --as-of 2025-05-02T00:00:00Z --out /var/lib/remit/recon/2025-05-02
      remit reconcile --as-of now --out /tmp/recon --master spark://spark-master:7077

    Exit status: 0 reconciled (PENDING alone is 0), 2 breaks found, 1 the job failed.
    """
    console = Console()
    try:
        config = RunConfig(
            as_of=parse_as_of(as_of),
            out_dir=str(out),
            snapshot_dir=str(snapshot or out / "snapshot"),
            grace=timedelta(minutes=grace_minutes),
            database_url=resolve_database_url(database_url),
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    run_id, started_at = uuid.uuid4(), datetime.now(UTC)
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    try:
        with Progress(*columns, console=console, transient=False) as progress:
            step = progress.add_task("export snapshot", total=1)
            counts = job.export(config) if snapshot is None else {}
            progress.update(step, completed=1, description=f"export snapshot ({sum(counts.values()):,} rows)")
            step = progress.add_task(f"reconcile (Spark {master})", total=1)
            # Spark's own console progress bar would tear through the rich one.
            spark = job.build_spark({"spark.master": master, "spark.ui.showConsoleProgress": "false"})
            result = job.reconcile(spark, config)
            if counts:
                result = replace(result, input_counts=counts)
            progress.update(step, completed=1)
            step = progress.add_task("record run and write reports", total=1)
            job.finish(config, result, run_id, started_at)
            progress.update(step, completed=1)
    except Exception as exc:
        console.print_exception()
        job.fail(config, run_id, started_at, repr(exc))
        raise typer.Exit(st.EXIT_FAILED) from exc
    print_report(console, result, out)
    raise typer.Exit(st.exit_code(result.result))

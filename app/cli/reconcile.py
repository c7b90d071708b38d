"""`remit reconcile`: the nightly reconciliation, run in-process (Spark local mode by default)."""

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from app.cli.common import console, err_console
from app.cli.listing import FORMAT, Format, print_csv, print_json, print_lines, print_table, union
from app.cli.progress import progress
from app.cli.spark_extra import spark_extra_required
from app.settings import get_settings, system_url
from reconciliation import statuses as st
from reconciliation.config import DEFAULT_GRACE_MINUTES, CoreTls, RunConfig, parse_as_of

if TYPE_CHECKING:
    from reconciliation.result import ReconcileResult


def reconcile_command(
    as_of: str = typer.Option(..., "--as-of", help="Reconcile as of this time: ISO 8601 with offset, or 'now'."),
    out: Path = typer.Option(..., "--out", help="Report directory: summary.csv/.parquet, breaks.*, snapshot/."),
    master: str = typer.Option("local[*]", "--master", help="Spark master URL, passed through unchanged."),
    grace_minutes: int = typer.Option(
        DEFAULT_GRACE_MINUTES, "--grace-minutes", min=0, help="Minutes after TTL before in-flight turns missing."
    ),
    database_url: str | None = typer.Option(
        None,
        "--database-url",
        help="PostgreSQL URL (default: the system role's, REMIT_SYSTEM_DATABASE_URL or derived from "
        "REMIT_DATABASE_URL): the snapshot is exported from it and the run recorded in it.",
        show_default=False,
    ),
    snapshot: Path | None = typer.Option(
        None, "--snapshot", help="Reconcile an existing snapshot directory instead of exporting one."
    ),
    core_url: str | None = typer.Option(
        None,
        "--core-url",
        help="The external core's base URL (default: REMIT_CORE_BANKING_URL): its journal is compared too "
        "(three-way). Neither set: the embedded ledger, remit's records only.",
        show_default=False,
    ),
    fmt: Format = FORMAT,
) -> None:
    """Reconcile every batch: accepted = processed + dead-lettered + expired + in flight, money moved once.

    Example:

    \b
      remit reconcile --as-of 2025-05-02T00:00:00Z --out /var/lib/remit/recon/2025-05-02
      remit reconcile --as-of now --out /tmp/recon --master spark://spark-master:7077

    With an external core (REMIT_CORE_BANKING_URL or --core-url) its journal is compared with remit's
    records too: booked in both, only in the core, only in remit, amount/currency/transfer id mismatch.

    --format json prints the outcome, every summary row and every break as one document; csv one table whose
    `record` is `summary` or `break` (the outcome line then goes to stderr). The report files are written
    either way.

    Exit status: 0 reconciled (PENDING alone is 0), 2 breaks found, 1 the job failed.
    Needs the spark extra and Java: pip install 'remit[spark]'.
    """
    settings = get_settings()
    with spark_extra_required(settings.java_home):  # only this command needs them: `pip install remit` has neither
        from reconciliation import job
        from reconciliation.snapshot import SnapshotLayoutError

    try:
        config = RunConfig(
            as_of=parse_as_of(as_of),
            out_dir=str(out),
            snapshot_dir=str(snapshot or out / "snapshot"),
            grace=timedelta(minutes=grace_minutes),
            database_url=database_url or system_url(settings),  # every tenant's rows: only remit_system sees them
            core_url=core_url or settings.core_banking_url,
            core_token=settings.core_banking_token.get_secret_value() if settings.core_banking_token else None,
            core_tls=CoreTls(
                settings.core_banking_ca_file,
                settings.core_banking_client_cert_file,
                settings.core_banking_client_key_file,
            ),
        )
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    run_id, started_at = uuid.uuid4(), datetime.now(UTC)
    try:
        with progress() as steps:
            step = steps.task("export snapshot" + (" and the core's journal" if config.core_url else ""))
            counts = job.export(config) if snapshot is None else {}
            step.finish(f"{sum(counts.values()):,} rows" if counts else "existing snapshot")
            step = steps.task(f"reconcile (Spark {master})")
            # Spark's own console progress bar would tear through ours.
            spark = job.build_spark({"spark.master": master, "spark.ui.showConsoleProgress": "false"})
            result = job.reconcile(spark, config)
            if counts:
                result = replace(result, input_counts=counts)
            step.finish(f"{result.message_count:,} messages")
            step = steps.task("record run and write reports")
            job.finish(config, result, run_id, started_at)
            step.finish(f"{result.breaks.num_rows:,} breaks")
    except SnapshotLayoutError as exc:  # not a run: the snapshot given cannot be reconciled
        raise typer.BadParameter(str(exc), param_hint="'--snapshot'") from exc
    except Exception as exc:
        err_console.print_exception()
        job.fail(config, run_id, started_at, repr(exc))
        raise typer.Exit(st.EXIT_FAILED) from exc
    show_result(fmt, result, out)
    raise typer.Exit(st.exit_code(result.result))


def show_result(fmt: Format, result: "ReconcileResult", out: Path) -> None:
    from reconciliation.report import breaks_table, notes, summary_table

    summary, breaks = result.summary.to_pylist(), result.breaks.to_pylist()
    if fmt is Format.JSON:
        print_json(console, {**outcome(result, out), "summary": summary, "breaks": breaks})
    elif fmt is Format.CSV:
        tables = ("summary", result.summary.schema.names, summary), ("break", result.breaks.schema.names, breaks)
        print_csv(console, *union(*tables))
    else:
        print_table(console, summary_table(result), *([breaks_table(result)] if breaks else []))
    print_lines(console if fmt is Format.TABLE else err_console, *notes(result, out))


def outcome(result: "ReconcileResult", out: Path) -> dict[str, Any]:
    """The run in a few figures: what the last line of the table format says."""
    return {
        "result": result.result,
        "as_of": result.as_of,
        "message_count": result.message_count,
        "break_count": result.breaks.num_rows,
        "batches_with_breaks": result.batches_in(st.BREAKS),
        "batches_pending": result.batches_in(st.PENDING),
        "three_way": result.three_way,
        "input_counts": result.input_counts,
        "reports": str(out),
    }

"""The nightly reconciliation job: export a snapshot, classify every message, record and report.

Run it with spark-submit (the master comes from the command line, never from this code):

    spark-submit --master local[*] reconciliation/job.py --as-of 2025-05-02T00:00:00Z --out /var/remit/recon

Exit status: 0 reconciled (or only pending), 2 breaks found, 1 the job failed.
"""

import argparse
import asyncio
import logging
import sys
import traceback
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if __package__ in (None, ""):
    # spark-submit runs this file as a script: make its package importable from the checkout.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow.parquet as pq
from rich.console import Console

from reconciliation import statuses as st
from reconciliation.classify import classify_messages, three_way
from reconciliation.config import DEFAULT_GRACE_MINUTES, CoreTls, RunConfig, parse_as_of
from reconciliation.core_journal import export_core_journal
from reconciliation.export import export_snapshot
from reconciliation.names import resolve_names
from reconciliation.record import RunTimes, record_failure, record_run, with_age
from reconciliation.report import print_report, write_reports
from reconciliation.result import ReconcileResult, split_result, wanted_hashes
from reconciliation.snapshot import CORE_JOURNAL, TABLES, read_snapshot
from reconciliation.summary import summarize

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("reconciliation")

# Forced whatever the submit command says: reports print UTC, and money must fail loudly on overflow.
_SESSION_CONF = {"spark.sql.session.timeZone": "UTC", "spark.sql.ansi.enabled": "true"}
# Measured at 10M messages on 2 cores (docs/benchmarks.md): 88 partitions of 64 MB were 5-8% slower than 16-22;
# per-task overhead, not memory, is what a small partition costs in local mode.
_TARGET_PARTITION_BYTES = 256 << 20
# Parquet snapshot bytes -> shuffle bytes: the tagged rows are uncompressed and carry a few extra columns.
_SHUFFLE_EXPANSION = 4


def build_spark(extra_conf: dict[str, str] | None = None) -> "SparkSession":
    """The session for the job; `extra_conf` is for launchers (the CLI), never a master set here."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("remit-reconcile")
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    for key, value in _SESSION_CONF.items():
        spark.conf.set(key, value)
    return spark


def _size_shuffle(spark: "SparkSession", snapshot_dir: str) -> None:
    """Shuffle partitions from the input size, unless the submitter chose a number explicitly."""
    if spark.sparkContext.getConf().contains("spark.sql.shuffle.partitions"):
        return
    local = Path(snapshot_dir)
    if not local.is_dir():
        return  # remote storage: keep Spark's default and let AQE coalesce
    size = sum(p.stat().st_size for p in local.rglob("*.parquet") if p.is_file())
    wanted = (size * _SHUFFLE_EXPANSION) // _TARGET_PARTITION_BYTES + 1
    parallelism = spark.sparkContext.defaultParallelism
    # A multiple of the cores so the last wave of tasks is not half empty.
    partitions = max(parallelism, -(-wanted // parallelism) * parallelism)
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))


def _input_counts(tables: dict[str, "DataFrame"], snapshot_dir: str) -> dict[str, int]:
    """Rows per snapshot table: from Parquet footers when local, else a (metadata-only) Spark count."""
    counts: dict[str, int] = {}
    for table in (*TABLES, CORE_JOURNAL) if CORE_JOURNAL.name in tables else TABLES:
        path = table.path(Path(snapshot_dir))
        if path.is_file():
            counts[table.name] = pq.ParquetFile(path).metadata.num_rows
        else:
            counts[table.name] = tables[table.name].count()
    return counts


def reconcile(spark: "SparkSession", config: RunConfig) -> ReconcileResult:
    """Classify every message of the snapshot and summarize per batch x currency (one Spark job)."""
    _size_shuffle(spark, config.snapshot_dir)
    tables = read_snapshot(spark, config.snapshot_dir)
    messages = classify_messages(tables, config.as_of, config.grace)
    raw = summarize(messages, tables["batch_totals"]).toArrow()
    names = resolve_names(tables, wanted_hashes(raw))
    counts = _input_counts(tables, config.snapshot_dir)
    return split_result(raw, names, config.as_of, counts, three_way(tables))


def export(config: RunConfig) -> dict[str, int]:
    """remit's tables, then (when a core is configured) the core's journal: the core commits a transfer before
    remit records it, so read in this order every transfer remit's snapshot names is in the core's."""
    if config.database_url is None:
        raise ValueError("exporting a snapshot needs a database URL (--database-url)")
    snapshot_dir = Path(config.snapshot_dir)
    counts = asyncio.run(export_snapshot(config.database_url, config.as_of, snapshot_dir))
    if config.core_url is not None:
        counts.update(
            export_core_journal(
                config.core_url, config.as_of, config.grace, snapshot_dir, token=config.core_token, tls=config.core_tls
            )
        )
    return counts


def finish(config: RunConfig, result: ReconcileResult, run_id: uuid.UUID, started_at: datetime) -> None:
    """Record the run (when a database is configured), then write the report files."""
    times = RunTimes(run_id, started_at, datetime.now(UTC), config.grace)
    if config.database_url is not None:
        breaks = asyncio.run(record_run(config.database_url, result, times))
    else:
        breaks = with_age(result.breaks, result.as_of, {})
    write_reports(result, breaks, Path(config.out_dir))


def fail(config: RunConfig, run_id: uuid.UUID, started_at: datetime, error: str) -> None:
    """Best effort: a failed run is recorded, but recording must not hide the original error."""
    if config.database_url is None:
        return
    times = RunTimes(run_id, started_at, datetime.now(UTC), config.grace)
    try:
        asyncio.run(record_failure(config.database_url, config.as_of, times, error))
    except Exception:
        log.exception("could not record the failed run")


def _parse_args(argv: list[str] | None) -> tuple[RunConfig, bool]:
    parser = argparse.ArgumentParser(prog="reconciliation/job.py", description=__doc__.splitlines()[0])
    parser.add_argument("--as-of", required=True, help="ISO 8601 with offset, e.g. 2025-05-02T00:00:00Z, or now")
    parser.add_argument("--out", required=True, help="report directory (summary.*, breaks.*, snapshot/)")
    parser.add_argument("--snapshot", help="reconcile this existing snapshot directory instead of exporting")
    parser.add_argument("--grace-minutes", type=int, default=DEFAULT_GRACE_MINUTES)
    parser.add_argument(
        "--database-url",
        help="PostgreSQL URL, as remit_system; needed to export a snapshot and to record the run",
    )
    parser.add_argument(
        "--core-url",
        help="the external core's base URL: its journal is compared too (three-way); none: the embedded ledger",
    )
    parser.add_argument(
        "--core-token-file",
        help="a file holding the bearer token the core gave remit (never on the command line, where `ps` shows it)",
    )
    parser.add_argument("--core-ca-file", help="CA certificates (PEM) the core's https certificate is verified with")
    parser.add_argument("--core-client-cert-file", help="remit's client certificate (PEM), for mutual TLS")
    parser.add_argument("--core-client-key-file", help="its private key (PEM)")
    args = parser.parse_args(argv)
    token = Path(args.core_token_file).read_text().strip() if args.core_token_file else None
    config = RunConfig(
        as_of=parse_as_of(args.as_of),
        out_dir=args.out,
        snapshot_dir=args.snapshot or f"{args.out.rstrip('/')}/snapshot",
        grace=timedelta(minutes=args.grace_minutes),
        database_url=args.database_url,
        core_url=args.core_url,
        core_token=token,
        core_tls=CoreTls(args.core_ca_file, args.core_client_cert_file, args.core_client_key_file),
    )
    return config, args.snapshot is None


def main(argv: list[str] | None = None) -> int:
    config, needs_export = _parse_args(argv)
    # Logs (cron, spark-submit) are not terminals: rich would squeeze the table into 80 columns.
    console = Console(width=None if sys.stdout.isatty() else 160)
    run_id, started_at = uuid.uuid4(), datetime.now(UTC)
    try:
        counts = export(config) if needs_export else {}
        result = reconcile(build_spark(), config)
        if counts:
            result = replace(result, input_counts=counts)
        finish(config, result, run_id, started_at)
    except Exception:
        console.print_exception()
        fail(config, run_id, started_at, traceback.format_exc())
        return st.EXIT_FAILED
    print_report(console, result, Path(config.out_dir))
    return st.exit_code(result.result)


if __name__ == "__main__":
    sys.exit(main())

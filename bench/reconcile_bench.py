"""Reconciliation bench: the Spark job vs DuckDB on the same Parquet snapshot (not part of the tests).

    .venv/bin/python bench/reconcile_bench.py --messages 1000000

Generates the snapshot (cached per size), times the Spark reconciliation in local mode (session start
excluded, reported apart) and the DuckDB reference, checks both summaries are identical, and appends the
result to docs/benchmarks.md under "## Reconciliation". The bar (issue 18): the median of the per-round
ratios at most 2x, each round started on a quiet machine (load average below 1, waited for and recorded).
"""

import argparse
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reconcile_datagen import AS_OF, GRACE, LAYOUT, generate
from reconcile_duckdb import reconcile_duckdb

from reconciliation.config import RunConfig
from reconciliation.job import build_spark, reconcile

BAR = 2.0
QUIET = 1.0
_KEYS = [("correlation_id", "ascending"), ("tenant_id", "ascending"), ("currency", "ascending")]


def _snapshot(n: int, base: Path) -> Path:
    path = base / f"remit-recon-bench-{n}"
    marker = path / "_generated"
    if not marker.exists() or marker.read_text() != LAYOUT:
        started = time.perf_counter()
        print(f"generating {n:,} messages in {path} ...", flush=True)
        generate(path, n)
        marker.write_text(LAYOUT)
        print(f"  generated in {time.perf_counter() - started:.1f} s", flush=True)
    return path


def _same(spark_summary: pa.Table, duck_summary: pa.Table) -> list[str]:
    """Columns that differ between the two summaries (empty when identical)."""
    cols = duck_summary.column_names
    a = spark_summary.select(cols).sort_by(_KEYS)
    b = duck_summary.select(cols).sort_by(_KEYS)
    if a.num_rows != b.num_rows:
        return [f"rows {a.num_rows} != {b.num_rows}"]
    return [c for c in cols if a[c].to_pylist() != b[c].to_pylist()]


def _machine() -> str:
    import duckdb
    import pyspark

    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"nproc {os.cpu_count()}, {mem_gib:.0f} GiB, Python {platform.python_version()}, "
        f"pyspark {pyspark.__version__}, duckdb {duckdb.__version__}, pyarrow {pa.__version__}, "
        f"{platform.system()} {platform.release()}, load average at the end {os.getloadavg()[0]:.1f}"
    )


def _wait_quiet(limit_s: float) -> float:
    """Wait (up to limit_s) for the 1-minute load average to fall below QUIET; returns the load seen."""
    deadline = time.monotonic() + limit_s
    while os.getloadavg()[0] >= QUIET and time.monotonic() < deadline:
        time.sleep(5)
    return os.getloadavg()[0]


def _append_result(doc: Path, text: str) -> None:
    """Append under '## Reconciliation' (created at the end if absent), leaving other sections alone."""
    doc.parent.mkdir(parents=True, exist_ok=True)
    content = doc.read_text() if doc.exists() else "# Benchmarks\n"
    heading = "## Reconciliation"
    if heading not in content:
        doc.write_text(content.rstrip("\n") + f"\n\n{heading}\n\n{text}\n")
        return
    start = content.index(heading) + len(heading)
    nxt = content.find("\n## ", start)
    end = len(content) if nxt == -1 else nxt
    section = content[start:end].rstrip("\n")
    doc.write_text(content[:start] + section + f"\n\n{text}\n" + content[end:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000_000)
    parser.add_argument("--data", type=Path, default=Path("/tmp"))
    parser.add_argument("--repeat", type=int, default=1, help="timed runs of each engine, interleaved")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs first (JIT, code generation, caches)")
    parser.add_argument("--driver-memory", default="8g")
    parser.add_argument("--quiet-wait", type=float, default=300, help="seconds to wait for load < 1 per round")
    parser.add_argument("--doc", type=Path, default=Path(__file__).resolve().parent.parent / "docs/benchmarks.md")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    snapshot = _snapshot(args.messages, args.data)

    started = time.perf_counter()
    spark = build_spark({"spark.master": f"local[{cores}]", "spark.driver.memory": args.driver_memory,
                         "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"})  # fmt: skip
    spark.sparkContext.setLogLevel("WARN")
    session_s = time.perf_counter() - started
    config = RunConfig(as_of=AS_OF, out_dir="/tmp/unused", snapshot_dir=str(snapshot), grace=GRACE)
    for _ in range(args.warmup):
        reconcile(spark, config)
        reconcile_duckdb(snapshot, AS_OF, GRACE, threads=cores)
    spark_times, duck_times, loads = [], [], []
    for _ in range(args.repeat):
        loads.append(_wait_quiet(args.quiet_wait))
        print(f"load average {loads[-1]:.2f}", flush=True)
        t0 = time.perf_counter()
        result = reconcile(spark, config)
        spark_times.append(time.perf_counter() - t0)
        print(f"spark  {spark_times[-1]:7.2f} s", flush=True)
        t0 = time.perf_counter()
        duck = reconcile_duckdb(snapshot, AS_OF, GRACE, threads=cores)
        duck_times.append(time.perf_counter() - t0)
        print(f"duckdb {duck_times[-1]:7.2f} s", flush=True)
    spark.stop()

    diff = _same(result.summary, duck)
    ratios = [a / b for a, b in zip(spark_times, duck_times, strict=True)]
    ratio = statistics.median(ratios)
    spark_s, duck_s = statistics.median(spark_times), statistics.median(duck_times)
    verdict = "identical summaries" if not diff else f"SUMMARIES DIFFER in {', '.join(diff)}"
    line = (
        f"- {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {args.messages:,} messages, "
        f"{result.summary.num_rows:,} batch x currency rows, {result.breaks.num_rows:,} breaks: "
        f"Spark local[{cores}] median {spark_s:.2f} s (rounds {', '.join(f'{t:.1f}' for t in spark_times)}; "
        f"session start {session_s:.1f} s more), DuckDB {cores} threads median {duck_s:.2f} s "
        f"(rounds {', '.join(f'{t:.1f}' for t in duck_times)}), median of the per-round ratios {ratio:.2f}x "
        f"(rounds {', '.join(f'{r:.2f}' for r in ratios)}; {'within' if ratio <= BAR else 'OVER'} the "
        f"{BAR:.0f}x bar; {args.repeat} interleaved rounds after {args.warmup} warm-up; load average before each "
        f"round {', '.join(f'{x:.2f}' for x in loads)}); {verdict}. "
        f"Machine: {_machine()}."
    )
    print(line)
    _append_result(args.doc, line)
    return 0 if not diff else 1


if __name__ == "__main__":
    sys.exit(main())

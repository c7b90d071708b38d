"""Reconciliation bench: the Spark job vs DuckDB on the same Parquet snapshot (not part of the tests).

    .venv/bin/python bench/reconcile_bench.py --messages 1000000

Generates the snapshot (cached per size), times the Spark reconciliation in local mode (session start
excluded, reported apart) and the DuckDB reference, checks both summaries are identical, and appends the
result to docs/benchmarks.md under "## Reconciliation". The bar: Spark within 3x of DuckDB.
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

from reconcile_datagen import AS_OF, GRACE, generate
from reconcile_duckdb import reconcile_duckdb

from reconciliation.config import RunConfig
from reconciliation.job import build_spark, reconcile

BAR = 3.0
_KEYS = [("correlation_id", "ascending"), ("tenant_id", "ascending"), ("currency", "ascending")]


def _snapshot(n: int, base: Path) -> Path:
    path = base / f"remit-recon-bench-{n}"
    if not (path / "_generated").exists():
        started = time.perf_counter()
        print(f"generating {n:,} messages in {path} ...", flush=True)
        generate(path, n)
        (path / "_generated").write_text("ok\n")
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
        f"{platform.system()} {platform.release()}, load average {os.getloadavg()[0]:.1f} (machine shared)"
    )


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
    spark_times, duck_times = [], []
    for _ in range(args.repeat):
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
    # The machine is shared and noisy: the best time of each engine is the least disturbed measurement.
    spark_s, duck_s = min(spark_times), min(duck_times)
    ratio = spark_s / duck_s
    pair_ratio = statistics.median(a / b for a, b in zip(spark_times, duck_times, strict=True))
    verdict = "identical summaries" if not diff else f"SUMMARIES DIFFER in {', '.join(diff)}"
    line = (
        f"- {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {args.messages:,} messages, "
        f"{result.summary.num_rows:,} batch x currency rows, {result.breaks.num_rows:,} breaks: "
        f"Spark local[{cores}] {spark_s:.2f} s (session start {session_s:.1f} s more), "
        f"DuckDB {cores} threads {duck_s:.2f} s, ratio {ratio:.2f}x "
        f"({'within' if ratio <= BAR else 'OVER'} the {BAR:.0f}x bar; best of {args.repeat} after {args.warmup} "
        f"warm-up, median pairwise ratio {pair_ratio:.2f}x); {verdict}. "
        f"Machine: {_machine()}."
    )
    print(line)
    _append_result(args.doc, line)
    return 0 if not diff else 1


if __name__ == "__main__":
    sys.exit(main())

"""Reconciliation at scale: the Spark job on 10M and 100M messages, timed, with the driver's memory sampled.

    .venv/bin/python bench/reconcile_scale.py --parts 10 --part-size 10000000

Generates the snapshot as parts (each one bench/reconcile_datagen.py snapshot of `part-size` messages with
its own seed and batch numbers), so that generating never holds more than one part: the large snapshot is
every part, the small one the first part alone, in the same layout (a directory of Parquet files per table).
Each size runs in a fresh process (a fresh JVM, so each peak is its own), in local mode with the same driver
memory; the driver JVM's resident memory is sampled every half second. The bar (issue 18): the large run
completes, its memory flat (the peak within what the small run needed, not growing with the data), in at
most 12x the small run's time. Appends the result to docs/benchmarks.md under "## Reconciliation".
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reconcile_bench import _append_result
from reconcile_datagen import AS_OF, GRACE, LAYOUT, generate

TIME_BAR = 12.0
_TABLES = ("outbox", "ledger", "processed_messages", "dead_letters", "batch_totals", "batches")


def _generate_parts(base: Path, parts: int, part_size: int) -> None:
    for part in range(parts):
        done = base / f"_part-{part:05d}"
        if done.exists() and done.read_text() == LAYOUT:
            continue
        started = time.perf_counter()
        staging = base / f"_staging-{part:05d}"
        generate(staging, part_size, seed=7 + part, first_batch=part * max(1, part_size // 1000))
        for table in _TABLES:
            target = base / "all" / f"{table}.parquet"
            target.mkdir(parents=True, exist_ok=True)
            (staging / f"{table}.parquet").rename(target / f"part-{part:05d}.parquet")
        staging.rmdir()
        done.write_text(LAYOUT)
        print(f"part {part + 1}/{parts} generated in {time.perf_counter() - started:.1f} s", flush=True)
    first = base / "first"
    for table in _TABLES:
        (first / f"{table}.parquet").mkdir(parents=True, exist_ok=True)
        link = first / f"{table}.parquet" / "part-00000.parquet"
        if not link.exists():
            link.symlink_to(base / "all" / f"{table}.parquet" / "part-00000.parquet")


def _run_one(snapshot: Path, driver_memory: str) -> dict[str, object]:
    """Run in this process: the job once, timed, the driver JVM's RSS sampled meanwhile."""
    from reconciliation.config import RunConfig
    from reconciliation.job import build_spark, reconcile

    cores = os.cpu_count() or 1
    spark = build_spark({"spark.master": f"local[{cores}]", "spark.driver.memory": driver_memory,
                         "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"})  # fmt: skip
    spark.sparkContext.setLogLevel("WARN")
    samples: list[tuple[float, int]] = []
    stop = threading.Event()
    started = time.perf_counter()

    def sample() -> None:
        me = psutil.Process()
        while not stop.wait(0.5):
            rss = sum(p.memory_info().rss for p in me.children(recursive=True) if p.is_running())
            samples.append((time.perf_counter() - started, rss))

    sampler = threading.Thread(target=sample, daemon=True)
    baseline = sum(p.memory_info().rss for p in psutil.Process().children(recursive=True))
    sampler.start()
    config = RunConfig(as_of=AS_OF, out_dir="/tmp/unused", snapshot_dir=str(snapshot), grace=GRACE)
    t0 = time.perf_counter()
    result = reconcile(spark, config)
    seconds = time.perf_counter() - t0
    stop.set()
    sampler.join()
    spark.stop()
    return {"seconds": seconds, "baseline_rss": baseline, "samples": samples,
            "summary_rows": result.summary.num_rows, "breaks": result.breaks.num_rows}  # fmt: skip


def _in_fresh_process(snapshot: Path, driver_memory: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, __file__, "--run-one", str(snapshot), "--driver-memory", driver_memory],
                         check=True, capture_output=True, text=True)  # fmt: skip
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _profile(samples: list[list[float]]) -> str:
    """Peak, and the RSS at each tenth of the run: flat memory shows as a plateau, not a climb."""
    if not samples:
        return "no samples"
    peak = max(r for _, r in samples)
    tenths = [samples[min(len(samples) - 1, i * len(samples) // 10)][1] for i in range(1, 11)]
    return f"peak {peak / 2**20:,.0f} MB; at each tenth of the run: " + ", ".join(f"{r / 2**20:,.0f}" for r in tenths)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", type=int, default=10)
    parser.add_argument("--part-size", type=int, default=10_000_000)
    parser.add_argument("--data", type=Path, default=Path("/tmp/remit-recon-scale"))
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--doc", type=Path, default=Path(__file__).resolve().parent.parent / "docs/benchmarks.md")
    parser.add_argument("--run-one", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_one is not None:
        print(json.dumps(_run_one(args.run_one, args.driver_memory)))
        return 0
    _generate_parts(args.data, args.parts, args.part_size)
    runs = {}
    for label, snapshot in (("small", args.data / "first"), ("large", args.data / "all")):
        load = os.getloadavg()
        runs[label] = _in_fresh_process(snapshot, args.driver_memory)
        runs[label]["load"] = load
        print(f"{label}: {runs[label]['seconds']:.1f} s, {_profile(runs[label]['samples'])}", flush=True)  # type: ignore[arg-type]
    small, large = runs["small"], runs["large"]
    ratio = float(large["seconds"]) / float(small["seconds"])  # type: ignore[arg-type]
    peak_small = max(r for _, r in small["samples"])  # type: ignore[attr-defined]
    peak_large = max(r for _, r in large["samples"])  # type: ignore[attr-defined]
    n_small, n_large = args.part_size, args.part_size * args.parts
    line = (
        f"- {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, scale (bench/reconcile_scale.py, local[{os.cpu_count()}], "
        f"driver memory {args.driver_memory}, each size in a fresh JVM): {n_small:,} messages in "
        f"{small['seconds']:.1f} s ({_profile(small['samples'])}; load average before "  # type: ignore[arg-type]
        f"{small['load'][0]:.2f}), {n_large:,} messages in {large['seconds']:.1f} s "  # type: ignore[index]
        f"({_profile(large['samples'])}; load average before {large['load'][0]:.2f}): "  # type: ignore[arg-type,index]
        f"{ratio:.1f}x the time for {args.parts}x the data ({'within' if ratio <= TIME_BAR else 'OVER'} the "
        f"{TIME_BAR:.0f}x bar); driver peak {peak_large / peak_small:.2f}x the small run's; "
        f"{large['summary_rows']:,} batch x currency rows, {large['breaks']:,} breaks."
    )
    print(line)
    _append_result(args.doc, line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

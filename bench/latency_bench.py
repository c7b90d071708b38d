"""Publish-to-processed latency of remit's consumer at half of its measured maximum throughput.

Path measured: direct confirmed publish to the `payments` exchange (routing key `<tenant>.payment`, remit's
AMQP properties) -> quorum work queue -> the real consumer process (`faststream run app.main:app`, group
commit) -> `ledger`. The outbox relay is not in the path (its throughput is bench/relay_bench.py's subject).

Per run: (1) two maxima: pre-fill --calibrate messages and time the consumer's drain, then publish as many
again as fast as confirms allow while the consumer runs and time them to the last ledger row (end to end:
the path whose latency is measured, with the publisher sharing the machine); (2) open-loop paced
publishing at --load of the chosen --maximum (default end-to-end) for --seconds (messages are sent on a
fixed schedule, never waiting for the consumer); (3) latency = ledger.booked_at - the wall-clock time just
before the publish call. booked_at is PostgreSQL's now(), the start of the group-commit transaction, so the
commit itself (about one fsync) is
not included. Medians of --runs runs go to the `## Latency` section of docs/benchmarks.md.
"""

import argparse
import asyncio
import multiprocessing
import os
import signal
import subprocess
import time
from datetime import UTC, datetime
from functools import partial
from typing import Any

import _report as r
import aio_pika
import asyncpg
import httpx
from aio_pika.abc import AbstractIncomingMessage
from prometheus_client.parser import text_string_to_metric_families
from rich.progress import Progress

from app.messaging.headers import PUBLISHED_AT
from app.messaging.topology import Topology, routing_key
from tests.utils.services import PG_ADMIN_DSN


def percentile(sorted_values: list[float], q: float) -> float:
    k = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[k]


async def wait_ledger(conn: asyncpg.Connection, n: int, timeout: float = 300) -> tuple[float, int, float]:
    """Wait until ledger holds n rows; return (first-seen time, count then, end time)."""
    t0, c0 = 0.0, 0
    deadline = time.monotonic() + timeout
    while True:
        count = int(await conn.fetchval("SELECT count(*) FROM ledger"))
        now = time.perf_counter()
        if count and not t0:
            t0, c0 = now, count
        if count >= n:
            return t0, c0, now
        if time.monotonic() > deadline:
            raise RuntimeError(f"ledger stuck at {count}/{n}")
        await asyncio.sleep(0.05)


async def paced_publish(env: r.BenchEnv, payments: list[r.Payment], rate: float) -> dict[str, float]:
    """Open loop: message i is sent at start + i/rate (in 5 ms ticks); returns message_id -> send time."""
    sent: dict[str, float] = {}
    connection = await aio_pika.connect(env.amqp_url)
    try:
        channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        exchange = await channel.get_exchange("payments", ensure=True)
        key = routing_key(r.TENANT)
        tasks: list[asyncio.Task[object]] = []
        start = time.perf_counter()
        i = 0
        while i < len(payments):
            due = min(len(payments), int((time.perf_counter() - start) * rate) + 1)
            while i < due:
                p = payments[i]
                now = datetime.now(UTC)
                sent[str(p.message_id)] = now.timestamp()
                message = r.message_for(p, now)
                message.headers[PUBLISHED_AT] = int(now.timestamp() * 1000)  # stamped as the relay does
                tasks.append(asyncio.create_task(exchange.publish(message, routing_key=key)))
                i += 1
            await asyncio.sleep(0.005)
        await asyncio.gather(*tasks)
    finally:
        await connection.close()
    return sent


def _raw_child(amqp_url: str, queue: str, n: int, prefetch: int, ready: Any, out: Any) -> None:
    """The raw broker's own path, in a process of its own as remit's consumer is: consume, ack each delivery,
    no work; send back (message_id, delivery time) for the n deliveries."""

    async def run() -> None:
        connection = await aio_pika.connect(amqp_url)
        channel = await connection.channel()
        await channel.set_qos(prefetch_count=prefetch)
        q = await channel.get_queue(queue, ensure=True)
        seen: list[tuple[str, float]] = []
        done = asyncio.Event()

        async def on_message(message: AbstractIncomingMessage) -> None:
            seen.append((str(message.message_id), time.time()))
            await message.ack()
            if len(seen) >= n:
                done.set()

        await q.consume(on_message)
        ready.set()
        await done.wait()
        await connection.close()
        out.send(seen)

    asyncio.run(run())


async def raw_latency(env: r.BenchEnv, queue: str, rate: float, args: argparse.Namespace) -> list[float]:
    """The raw broker's latencies at `rate`: the same paced confirmed publish to the same quorum queue,
    consumed and acked by a plain aio-pika consumer in its own process (ms, sorted, warm-up dropped)."""
    payments = r.make_payments(int(rate * args.seconds))
    ctx = multiprocessing.get_context("spawn")
    ready, (receive, send) = ctx.Event(), ctx.Pipe(duplex=False)
    child = ctx.Process(target=_raw_child, args=(env.amqp_url, queue, len(payments), args.raw_prefetch, ready, send))
    child.start()
    try:
        if not await asyncio.to_thread(ready.wait, 60):
            raise RuntimeError("the raw consumer did not start")
        sent = await paced_publish(env, payments, rate)
        if not await asyncio.to_thread(receive.poll, 300):
            raise RuntimeError("the raw consumer did not report")
        seen: list[tuple[str, float]] = receive.recv()
    finally:
        child.join(timeout=30)
        if child.is_alive():
            child.kill()
    first = min(sent.values())
    return sorted((at - sent[mid]) * 1000 for mid, at in seen if mid in sent and sent[mid] - first >= args.warmup)


STAGES = ("delivered", "buffered", "processing", "commit_wait", "commit", "settle")
PAUSES = ("gc_gen0", "gc_gen1", "gc_gen2", "loop_lag")  # remit_pause_seconds (app/observability/pauses.py)
LONG_PAUSE = 0.025  # seconds: a pause this long shows in a p99 measured in tens of milliseconds
Buckets = dict[str, list[tuple[float, float]]]  # "stage:<name>" or "pause:<kind>" -> [(upper bound s, cumulative)]
_HISTOGRAMS = {"remit_batch_stage_seconds_bucket": ("stage", "stage"), "remit_pause_seconds_bucket": ("pause", "kind")}


async def stage_buckets(port: int) -> Buckets:
    """The consumer's remit_batch_stage_seconds and remit_pause_seconds histograms, from its /metrics."""
    async with httpx.AsyncClient(timeout=10) as client:
        text = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
    buckets: Buckets = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in _HISTOGRAMS:
                prefix, label = _HISTOGRAMS[sample.name]
                bound = float(sample.labels["le"])
                buckets.setdefault(f"{prefix}:{sample.labels[label]}", []).append((bound, sample.value))
    return buckets


def _counts(before: Buckets, after: Buckets, key: str) -> list[tuple[float, float]]:
    """Cumulative bucket counts of the paced phase only (after minus before)."""
    old = dict(before.get(key, []))
    return [(bound, n - old.get(bound, 0.0)) for bound, n in sorted(after.get(key, []))]


def stage_p99(before: Buckets, after: Buckets) -> dict[str, float]:
    """p99 per stage over the paced phase only, as the bucket bound in ms."""
    result = {}
    for stage in STAGES:
        counts = _counts(before, after, f"stage:{stage}")
        total = counts[-1][1] if counts else 0.0
        bound = next((b for b, n in counts if total and n >= 0.99 * total), float("nan"))
        result[stage] = bound * 1000
    return result


def pause_summary(before: Buckets, after: Buckets) -> dict[str, float]:
    """Per kind of pause over the paced phase: how many, how many of LONG_PAUSE or more, the longest's bucket (ms)."""
    result: dict[str, float] = {}
    for kind in PAUSES:
        counts = _counts(before, after, f"pause:{kind}")
        total = counts[-1][1] if counts else 0.0
        short = next((n for b, n in counts if b >= LONG_PAUSE), total)
        longest = next((b for b, n in counts if n >= total), float("nan")) if total else 0.0
        result |= {f"{kind}:n": total, f"{kind}:long": total - short, f"{kind}:max": longest * 1000}
    return result


async def publish_and_process(env: r.BenchEnv, conn: asyncpg.Connection, n: int) -> float:
    """The path's own maximum: publish n as fast as confirms allow while the consumer runs; n / time to the
    last ledger row. The publisher shares the 2 cores, as it does when latency is measured."""
    payments = r.make_payments(n)
    start = time.perf_counter()
    await r.confirmed_publish(env.amqp_url, payments)
    _, _, end = await wait_ledger(conn, n)
    return n / (end - start)


async def one_run(
    env: r.BenchEnv, topology: Topology, args: argparse.Namespace, run: int, bar: Progress
) -> dict[str, float]:
    await r.truncate_effects(env)
    calibrate = r.make_payments(args.calibrate)
    task = bar.add_task(f"run {run}: pre-fill for the maximum", total=len(calibrate))
    await r.confirmed_publish(env.amqp_url, calibrate, on_progress=partial(bar.advance, task))
    extra = {"REMIT_PREFETCH": str(args.prefetch), "REMIT_COMMIT_BATCH_MAX": str(args.commit_batch_max)}
    command, port = r.remit_consumer()
    proc = subprocess.Popen(  # noqa: ASYNC220
        command,
        env=env.service_env(**extra),
        cwd=r.ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    conn = await asyncpg.connect(env.dsn)
    try:
        t0, c0, t1 = await wait_ledger(conn, len(calibrate))
        drained = (len(calibrate) - c0) / (t1 - t0)
        await conn.execute("TRUNCATE ledger, processed_messages")
        end_to_end = await publish_and_process(env, conn, args.calibrate)
        maximum = end_to_end if args.maximum == "end-to-end" else drained
        rate = args.rate or maximum * args.load
        bar.update(task, description=f"run {run}: max {maximum:,.0f} msg/s; pacing at {rate:,.0f}")
        await conn.execute("TRUNCATE ledger, processed_messages")
        paced = r.make_payments(int(rate * args.seconds))
        before = await stage_buckets(port)
        sent = await paced_publish(env, paced, rate)
        await wait_ledger(conn, len(paced))
        after = await stage_buckets(port)
        stages, pauses = stage_p99(before, after), pause_summary(before, after)
        rows = await conn.fetch("SELECT message_id::text AS id, extract(epoch FROM booked_at) AS at FROM ledger")
    finally:
        await conn.close()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=40)
    bar.update(task, description=f"run {run}: the raw broker at {rate:,.0f} msg/s")
    await r.purge(env, r.work_queue(topology))
    raw = await raw_latency(env, r.work_queue(topology), rate, args)
    first = min(sent.values())
    lat = sorted(
        (float(row["at"]) - sent[row["id"]]) * 1000
        for row in rows
        if row["id"] in sent and sent[row["id"]] - first >= args.warmup  # drop the first --warmup seconds
    )
    return {
        "drain": drained,
        "e2e": end_to_end,
        "max": maximum,
        "rate": rate,
        "n": float(len(lat)),
        "p50": percentile(lat, 0.50),
        "p95": percentile(lat, 0.95),
        "p99": percentile(lat, 0.99),
        "p999": percentile(lat, 0.999),
        "max_ms": lat[-1],
        "raw_n": float(len(raw)),
        "raw_p50": percentile(raw, 0.50),
        "raw_p99": percentile(raw, 0.99),
        "raw_p999": percentile(raw, 0.999),
        "diff_p99": percentile(lat, 0.99) - percentile(raw, 0.99),
        **{f"stage:{name}": value for name, value in stages.items()},
        **{f"pause:{name}": value for name, value in pauses.items()},
    }


async def bench(args: argparse.Namespace) -> list[dict[str, float]]:
    results = []
    async with r.fresh_env("latency", keep=args.keep) as env:
        topology = await r.declare(env)
        if args.diagnose_async_commit:
            admin = await asyncpg.connect(PG_ADMIN_DSN)
            try:  # this bench database only, for new sessions: the consumer starts after this
                await admin.execute(f'ALTER DATABASE "{env.database}" SET synchronous_commit = off')
            finally:
                await admin.close()
        with r.progress() as bar:
            for run in range(1, args.runs + 1):
                res = await one_run(env, topology, args, run, bar)
                results.append(res)
                bar.console.print(
                    f"run {run}: max {res['max']:,.0f} msg/s, paced {res['rate']:,.0f} msg/s, "
                    f"p50 {res['p50']:.1f} ms, p95 {res['p95']:.1f} ms, p99 {res['p99']:.1f} ms; "
                    f"raw broker p50 {res['raw_p50']:.1f} ms, p99 {res['raw_p99']:.1f} ms"
                )
    return results


def report(args: argparse.Namespace, res: list[dict[str, float]], machine: str) -> str:
    def med(key: str) -> float:
        return r.median([x[key] for x in res])

    rows = "\n".join(
        f"| {i} | {x['drain']:,.0f} | {x['e2e']:,.0f} | {x['rate']:,.0f} | {x['n']:,.0f} | {x['p50']:.1f} | "
        f"{x['p95']:.1f} | {x['p99']:.1f} | {x['p999']:.1f} | {x['max_ms']:.1f} |"
        for i, x in enumerate(res, start=1)
    )
    raw_rows = "\n".join(
        f"| {i} | {x['rate']:,.0f} | {x['raw_n']:,.0f} | {x['raw_p50']:.1f} | {x['raw_p99']:.1f} | "
        f"{x['raw_p999']:.1f} | {x['p99']:.1f} | {x['diff_p99']:.1f} |"
        for i, x in enumerate(res, start=1)
    )
    verdict = "PASS" if med("p99") < 100 else "MISS"
    diff_verdict = "PASS" if med("diff_p99") < 30 else "MISS"
    stage_rows = "\n".join(
        f"| {stage} | " + " | ".join(f"{x.get(f'stage:{stage}', float('nan')):g}" for x in res) + " |"
        for stage in STAGES
    )
    pause_rows = "\n".join(
        f"| {kind} | "
        + " | ".join(
            f"{x.get(f'pause:{kind}:n', 0):,.0f} / {x.get(f'pause:{kind}:long', 0):,.0f} / "
            f"{x.get(f'pause:{kind}:max', float('nan')):g}"
            for x in res
        )
        + " |"
        for kind in PAUSES
    )
    return f"""{machine}

`.venv/bin/python bench/latency_bench.py --runs {args.runs} --seconds {args.seconds} --load {args.load} \
--maximum {args.maximum}`: path = direct confirmed publish to `payments` -> quorum `payments.work.enterprise` ->
`faststream run app.main:app` (prefetch {args.prefetch}, commit batch max {args.commit_batch_max}) -> ledger.
Two maxima are measured in the same run: the consumer's drain of {args.calibrate:,} pre-filled messages, and
the path's end to end ({args.calibrate:,} messages published as fast as confirms allow while the consumer runs,
to the last ledger row; the publisher shares the 2 cores, as it does below). Messages are then published
open-loop at {args.load:.0%} of the {args.maximum} maximum for {args.seconds} s; latency = `ledger.booked_at`
(start of the commit transaction) minus the send time; the first {args.warmup} s are dropped.

| run | drain max msg/s | end-to-end max msg/s | paced msg/s | samples | p50 ms | p95 ms | p99 ms | p999 ms | max ms |
|---|---|---|---|---|---|---|---|---|---|
{rows}
| **median** | {med("drain"):,.0f} | {med("e2e"):,.0f} | {med("rate"):,.0f} | | {med("p50"):.1f} | {med("p95"):.1f} | \
{med("p99"):.1f} | {med("p999"):.1f} | {med("max_ms"):.1f} |

The raw broker at the same rate in the same run, after remit's consumer stopped: the same paced confirmed
publish to the same quorum queue, consumed by a plain aio-pika consumer in its own process (prefetch
{args.raw_prefetch}, one ack per delivery, no work); latency = delivery callback time minus the send time, the
same first {args.warmup} s dropped. remit's share of the tail = remit's p99 minus the raw p99.

| run | paced msg/s | samples | raw p50 ms | raw p99 ms | raw p999 ms | remit p99 ms | remit p99 - raw p99 ms |
|---|---|---|---|---|---|---|---|
{raw_rows}
| **median** | {med("rate"):,.0f} | | {med("raw_p50"):.1f} | {med("raw_p99"):.1f} | {med("raw_p999"):.1f} | \
{med("p99"):.1f} | {med("diff_p99"):.1f} |

Where the consumer's batches spent their time during the paced phase (`remit_batch_stage_seconds`,
scraped from the consumer's /metrics before and after; p99 as the upper bound of its histogram bucket, ms):

| stage | {" | ".join(f"run {i}" for i in range(1, len(res) + 1))} |
|---|{"---|" * len(res)}
{stage_rows}

The consumer's own pauses in the same phase (`remit_pause_seconds`, app/observability/pauses.py): each
garbage collection by generation, and how late a 50 ms timer of its event loop fired; per run: how many /
how many of {LONG_PAUSE * 1000:g} ms or more / the longest one's bucket bound, ms:

| pause | {" | ".join(f"run {i}" for i in range(1, len(res) + 1))} |
|---|{"---|" * len(res)}
{pause_rows}

| bar | median | result |
|---|---|---|
| p99 < 100 ms at half of the maximum throughput | {med("p99"):.1f} ms | **{verdict}** |
| remit's p99 - the raw broker's p99 < 30 ms (median of the per-run differences) | {med("diff_p99"):.1f} ms \
| **{diff_verdict}** |
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0, help="paced publishing time per run")
    parser.add_argument("--load", type=float, default=0.5, help="fraction of the measured maximum")
    parser.add_argument(
        "--maximum",
        choices=["end-to-end", "drain"],
        default="end-to-end",
        help="which maximum --load is a fraction of (see the module docstring)",
    )
    parser.add_argument("--rate", type=float, default=0.0, help="fixed msg/s instead of load x measured maximum")
    parser.add_argument("--calibrate", type=int, default=20_000, help="messages drained to measure the maximum")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds of sends left out of the percentiles")
    parser.add_argument("--prefetch", type=int, default=int(os.environ.get("REMIT_PREFETCH", "100")))
    parser.add_argument("--commit-batch-max", type=int, default=int(os.environ.get("REMIT_COMMIT_BATCH_MAX", "256")))
    parser.add_argument(
        "--diagnose-async-commit",
        action="store_true",
        help="diagnosis only, never a setting for remit: PostgreSQL acknowledges commits before their fsync",
    )
    parser.add_argument("--raw-prefetch", type=int, default=1000, help="the raw consumer's prefetch")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args()
    machine = r.machine_details()
    results = asyncio.run(bench(args))
    text = report(args, results, machine)
    text = r.with_notes(text, "latency")
    print(text)
    if not args.no_write:
        r.write_section("Latency", text)
        print(f"wrote the Latency section of {r.DOC}")


if __name__ == "__main__":
    main()

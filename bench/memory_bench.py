"""Consumer memory over many messages: RSS of the real consumer process (psutil) while it processes
--messages payments (default one million) published to the `payments` exchange by this script.

The publisher keeps at most --backlog messages ahead of the ledger, so the broker's queue stays bounded
and the consumer is the one under test. RSS is sampled every second; start (service up, no messages yet),
after the warm-up (--warmup messages), peak and end (everything processed) are printed, with a sample per
10% of the run, and written to the `## Memory` section of docs/benchmarks.md.
"""

import argparse
import asyncio
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

import _report as r
import aio_pika
import asyncpg
import psutil

from app.messaging.topology import routing_key

MIB = 2**20


@dataclass
class Trace:
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (elapsed s, processed, rss bytes)

    def rss_at(self, processed: int) -> int:
        return next((rss for _, done, rss in self.samples if done >= processed), self.samples[-1][2])


async def sample(proc: psutil.Process, conn: asyncpg.Connection, trace: Trace, start: float) -> None:
    while True:
        done = int(await conn.fetchval("SELECT count(*) FROM ledger"))
        trace.samples.append((time.perf_counter() - start, done, proc.memory_info().rss))
        await asyncio.sleep(1.0)


async def run(args: argparse.Namespace) -> tuple[Trace, float, int]:
    trace = Trace()
    async with r.fresh_env("memory", keep=args.keep) as env:
        await r.declare(env)
        extra = {"REMIT_PREFETCH": str(args.prefetch), "REMIT_COMMIT_BATCH_MAX": str(args.commit_batch_max)}
        popen = subprocess.Popen(  # noqa: ASYNC220
            r.remit_consumer()[0],
            env=env.service_env(**extra),
            cwd=r.ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        proc = psutil.Process(popen.pid)
        conn = await asyncpg.connect(env.dsn)
        sampler_conn = await asyncpg.connect(env.dsn)
        try:
            await asyncio.sleep(args.settle)  # the service imports, connects and declares its topology
            start = time.perf_counter()
            sampler = asyncio.create_task(sample(proc, sampler_conn, trace, start))
            connection = await aio_pika.connect(env.amqp_url)
            channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
            exchange = await channel.get_exchange("payments", ensure=True)
            key = routing_key(r.TENANT)
            published = 0
            with r.progress() as bar:
                task = bar.add_task("processed", total=args.messages)
                while published < args.messages:
                    done = int(await conn.fetchval("SELECT count(*) FROM ledger"))
                    bar.update(task, completed=done)
                    if published - done >= args.backlog:
                        await asyncio.sleep(0.2)
                        continue
                    chunk = r.make_payments(min(args.chunk, args.messages - published))
                    now = datetime.now(UTC)
                    window = asyncio.Semaphore(1000)

                    async def one(p: r.Payment, now: datetime = now, window: asyncio.Semaphore = window) -> None:
                        try:
                            await exchange.publish(r.message_for(p, now), routing_key=key)
                        finally:
                            window.release()

                    tasks = []
                    for p in chunk:
                        await window.acquire()
                        tasks.append(asyncio.create_task(one(p)))
                    await asyncio.gather(*tasks)
                    published += len(chunk)
                await connection.close()
                while (done := int(await conn.fetchval("SELECT count(*) FROM ledger"))) < args.messages:
                    bar.update(task, completed=done)
                    await asyncio.sleep(0.5)
                bar.update(task, completed=done)
            await asyncio.sleep(2.0)  # two more samples at rest
            elapsed = time.perf_counter() - start
            sampler.cancel()
            await asyncio.gather(sampler, return_exceptions=True)
            dead = int(await conn.fetchval("SELECT count(*) FROM delivery_attempts"))
        finally:
            await conn.close()
            await sampler_conn.close()
            popen.send_signal(signal.SIGTERM)
            popen.wait(timeout=60)
    return trace, elapsed, dead


def report(args: argparse.Namespace, trace: Trace, elapsed: float, dead: int, machine: str) -> str:
    start = trace.samples[0][2]
    warm = trace.rss_at(args.warmup)
    peak = max(rss for _, _, rss in trace.samples)
    end = trace.samples[-1][2]
    growth = (end - warm) / warm
    flat = "PASS" if abs(growth) <= 0.10 and (peak - warm) / warm <= 0.20 else "MISS"
    rows = "\n".join(
        f"| {pct}% | {trace.rss_at(args.messages * pct // 100) / MIB:,.1f} |" for pct in range(10, 101, 10)
    )
    return f"""{machine}

`.venv/bin/python bench/memory_bench.py --messages {args.messages}`: the real consumer (`faststream run app.main:app`,
prefetch {args.prefetch}, commit batch max {args.commit_batch_max}) processed {args.messages:,} payments in
{elapsed / 60:.1f} min ({args.messages / elapsed:,.0f} msg/s with the publisher on the same 2 cores, at most
{args.backlog:,} messages ahead of the ledger); {dead} delivery attempts failed. RSS sampled every second.

| point | RSS MiB |
|---|---|
| start (service up, no messages) | {start / MIB:,.1f} |
| after warm-up ({args.warmup:,} messages) | {warm / MIB:,.1f} |
| peak | {peak / MIB:,.1f} |
| end (all processed) | {end / MIB:,.1f} |

| processed | RSS MiB |
|---|---|
{rows}

| bar | end vs after warm-up | peak vs after warm-up | result |
|---|---|---|---|
| flat memory (end within 10%, peak within 20% of the warmed-up RSS) | {growth:+.1%} | {(peak - warm) / warm:+.1%} \
| **{flat}** |
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--warmup", type=int, default=50_000, help="messages before the reference RSS")
    parser.add_argument("--backlog", type=int, default=50_000, help="most messages published ahead of the ledger")
    parser.add_argument("--chunk", type=int, default=10_000, help="messages generated and published at a time")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds for the service to start")
    parser.add_argument("--prefetch", type=int, default=int(os.environ.get("REMIT_PREFETCH", "256")))
    parser.add_argument("--commit-batch-max", type=int, default=int(os.environ.get("REMIT_COMMIT_BATCH_MAX", "256")))
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args()
    machine = r.machine_details()
    trace, elapsed, dead = asyncio.run(run(args))
    text = report(args, trace, elapsed, dead, machine)
    text = r.with_notes(text, "memory")
    print(text)
    if not args.no_write:
        r.write_section("Memory", text)
        print(f"wrote the Memory section of {r.DOC}")


if __name__ == "__main__":
    main()

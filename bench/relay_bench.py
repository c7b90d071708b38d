"""Outbox relay throughput against the raw aio-pika confirmed-publish ceiling, in one run.

  raw    aio-pika publish to the `payments` exchange, persistent, publisher confirms, 1,000 in flight,
         the same AMQP properties remit sets (app.messaging.properties.amqp_message)
  raw queued  the same messages through the underlying aiormq channel's basic_publish(wait=False), the
         primitive the relay publishes with (a reference without a bar: the publish alone, no database)
  relay  remit's OutboxRelay (app/publisher/relay.py), in-process, draining N outbox rows that were
         COPY-ed in beforehand: `relay_once()` until it returns 0 (what `remit relay --once` does)

Both publish into remit's quorum work queue (`payments.work.enterprise`, purged between runs) with the same bodies.
Rounds are interleaved; medians and ratios go to the `## Relay` section of docs/benchmarks.md.
Tune the relay with REMIT_RELAY_BATCH_SIZE (or --batch-size).
"""

import argparse
import asyncio
import os
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial

import _report as r
import asyncpg
from rich.progress import Progress

from app.messaging.connection import connect, publisher_channel
from app.publisher.relay import MARK_EVERY, OutboxRelay
from app.storage.engine import make_engine

BAR = 0.85  # issue 18: the relay at >= 85% of the raw confirmed publish, median of 5 rounds
COLUMNS = (
    "message_id",
    "tenant_id",
    "correlation_id",
    "seq",
    "payment_reference",
    "amount_cents",
    "currency",
    "body",
    "accepted_at",
    "expires_at",
)


async def fill_outbox(env: r.BenchEnv, payments: list[r.Payment]) -> None:
    now = datetime.now(UTC)
    expires = now + timedelta(days=1)
    records = [
        (p.message_id, r.TENANT, r.CORRELATION_ID, i, p.reference, 150_000, "AUD", p.body, now, expires)
        for i, p in enumerate(payments, start=1)
    ]
    conn = await asyncpg.connect(env.dsn)
    try:
        await conn.execute("TRUNCATE outbox")
        await conn.copy_records_to_table("outbox", records=records, columns=COLUMNS)
        await conn.execute("VACUUM ANALYZE outbox")
    finally:
        await conn.close()


async def drain_relay(env: r.BenchEnv, n: int, batch_size: int, advance: partial[None]) -> float:
    engine = make_engine(env.sqlalchemy_url, pool_size=2)
    connection = await connect(env.amqp_url, "bench-relay")
    try:
        channel = await publisher_channel(connection)
        relay = OutboxRelay(engine, channel, "payments", "guest", batch_size)
        total = 0
        start = time.perf_counter()
        while published := await relay.relay_once():
            total += published
            advance(published)
        elapsed = time.perf_counter() - start
        if total != n:
            raise RuntimeError(f"relay published {total} of {n}")
        return n / elapsed
    finally:
        await connection.close()
        await engine.dispose()


@dataclass
class Rounds:
    raw: list[float] = field(default_factory=list)  # aio-pika's publish: the bar's reference
    queued: list[float] = field(default_factory=list)  # the relay's own publish primitive, alone
    relay: list[float] = field(default_factory=list)


async def raw_round(env: r.BenchEnv, payments: list[r.Payment], bar: Progress, label: str, queued: bool) -> float:
    task = bar.add_task(label, total=len(payments))
    rate = await r.confirmed_publish(env.amqp_url, payments, on_progress=partial(bar.advance, task), queued=queued)
    bar.update(task, description=f"{label}: {rate:,.0f} msg/s")
    return rate


async def bench(args: argparse.Namespace) -> Rounds:
    rounds = Rounds()
    payments = r.make_payments(args.messages)
    async with r.fresh_env("relay", keep=args.keep) as env:
        topology = await r.declare(env)
        with r.progress() as bar:
            for n in range(1, args.runs + 1):
                await r.purge(env, r.work_queue(topology))
                rounds.raw.append(await raw_round(env, payments, bar, f"round {n} raw", queued=False))
                await r.purge(env, r.work_queue(topology))
                rounds.queued.append(await raw_round(env, payments, bar, f"round {n} raw queued", queued=True))

                await r.purge(env, r.work_queue(topology))
                await fill_outbox(env, payments)
                task = bar.add_task(f"round {n} relay", total=len(payments))
                rate = await drain_relay(env, len(payments), args.batch_size, partial(bar.advance, task))
                rounds.relay.append(rate)
                bar.update(task, description=f"round {n} relay: {rate:,.0f} msg/s")
            await r.purge(env, r.work_queue(topology))
    return rounds


def ratios(a: list[float], b: list[float]) -> str:
    return ", ".join(f"{y / x:.0%}" for x, y in zip(a, b, strict=True))


def report(args: argparse.Namespace, res: Rounds, machine: str) -> str:
    ratio = r.median(res.relay) / r.median(res.raw)
    strict = r.median(res.relay) / r.median(res.queued)
    result = "PASS" if ratio >= BAR else "MISS"
    return f"""{machine}

`.venv/bin/python bench/relay_bench.py --messages {args.messages} --runs {args.runs} --batch-size {args.batch_size}`:
{args.messages:,} messages per run into remit's quorum work queue through the `payments` exchange, same bodies
and AMQP properties for every subject, queue purged between runs, runs interleaved. The raw publishers' messages
are built before their clock starts; the relay's clock includes reading the rows and building the messages.

| subject | what | runs (msg/s) | median msg/s |
|---|---|---|---|
| raw | aio-pika `exchange.publish`, persistent, publisher confirms, 1,000 in flight | {r.fmt_runs(res.raw)} \
| {r.median(res.raw):,.0f} |
| raw queued | the same through the underlying aiormq channel, `basic_publish(wait=False)` (the relay's \
primitive), 1,000 in flight | {r.fmt_runs(res.queued)} | {r.median(res.queued):,.0f} |
| relay | `OutboxRelay.relay_once()` until empty, batch {args.batch_size} rows (SELECT ... FOR UPDATE SKIP LOCKED, \
publish all with confirms, UPDATE published_at per {MARK_EVERY} confirmed rows while the rest are \
confirmed, commit) | {r.fmt_runs(res.relay)} | {r.median(res.relay):,.0f} |

| bar | ratio of medians | per-round ratios | result |
|---|---|---|---|
| relay >= {BAR:.0%} of raw | {ratio:.1%} | {ratios(res.raw, res.relay)} | **{result}** |
| (no bar) relay / raw queued | {strict:.1%} | {ratios(res.queued, res.relay)} | |
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=50_000, help="messages per run (default 50,000)")
    parser.add_argument("--runs", type=int, default=5, help="interleaved rounds; medians are reported")
    parser.add_argument("--batch-size", type=int, default=int(os.environ.get("REMIT_RELAY_BATCH_SIZE", "500")))
    parser.add_argument("--keep", action="store_true", help="keep the database and vhost afterwards")
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args()
    machine = r.machine_details()
    text = report(args, asyncio.run(bench(args)), machine)
    text = r.with_notes(text, "relay")
    print(text)
    if not args.no_write:
        r.write_section("Relay", text)
        print(f"wrote the Relay section of {r.DOC}")


if __name__ == "__main__":
    main()

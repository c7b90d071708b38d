"""Fair share inside a shared tier pool: a quiet tenant's latency while another tenant of its tier floods.

Two tenants of the `basic` tier (one shared quorum queue, `payments.work.basic`, 3 workers) in a fresh
database + vhost, with the real consumer (`faststream run app.main:app`) and the real relay
(`python -m app.cli relay`) as processes. Payments enter the way a submitted batch leaves them: rows
inserted into the outbox (accepted_at = insert time), which the relay publishes.

  phase 1 "B alone"  tenant B inserts one payment every --interval s for --seconds s
  phase 2 "A floods" B keeps its rate; tenant A inserts --ratio x as many (in bulk, every tick)

Latency = ledger.booked_at - outbox.accepted_at of B's payments: submit-to-processed (outbox -> relay ->
broker -> consumer -> ledger commit). It is measured with the fair relay (default) and with the old FIFO
relay (REMIT_RELAY_FAIR_SHARE=false: outbox_id order, no backpressure); the `## Fairness` section of
docs/benchmarks.md gets both. Bar: p99(B, A flooding) <= 2 x p99(B alone), for the fair relay.
"""

import argparse
import asyncio
import json
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import _report as r
import aio_pika
import asyncpg
import uuid6

from app.messaging.topology import Topology
from app.tenancy.routing import Route, apply_route
from tests.utils.factories import make_wire_dict
from tests.utils.services import ServiceProcess

TIER = "basic"
QUIET, NOISY = "quiet", "noisy"
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


def correlation_id(tenant: str) -> str:
    return f"bulk_{tenant}_20261121_batch_0001"


class Source:
    """Outbox rows for one tenant, with real wire bodies."""

    def __init__(self, tenant: str) -> None:
        self.tenant = tenant
        self.seq = 0
        self.template = make_wire_dict(tenant_id=tenant, correlation_id=correlation_id(tenant))

    def rows(self, n: int) -> list[tuple[Any, ...]]:
        now = datetime.now(UTC)
        out = []
        for _ in range(n):
            self.seq += 1
            message_id = uuid.UUID(int=uuid6.uuid7().int)
            reference = f"PAY-{self.tenant.upper()}-{self.seq:010d}"
            wire = {**self.template, "message_id": str(message_id), "payment_reference": reference}
            body = json.dumps(wire, separators=(",", ":")).encode()
            out.append(
                (
                    message_id,
                    self.tenant,
                    correlation_id(self.tenant),
                    self.seq,
                    reference,
                    150_000,
                    "AUD",
                    body,
                    now,
                    now + timedelta(days=1),
                )
            )
        return out


async def prepare(env: r.BenchEnv) -> None:
    conn = await asyncpg.connect(env.dsn)
    try:
        for tenant in (QUIET, NOISY):
            await conn.execute("INSERT INTO tenants (tenant_id, name, tier) VALUES ($1, $2, $3)", tenant, tenant, TIER)
            await conn.execute(
                "INSERT INTO batches (correlation_id, tenant_id, source_name, source_sha256, accepted_count,"
                " rejected_count) VALUES ($1, $2, 'bench', $3, 0, 0)",
                correlation_id(tenant),
                tenant,
                uuid.uuid4().hex * 2,
            )
    finally:
        await conn.close()
    topology = Topology.from_settings(env.settings())
    connection = await aio_pika.connect(env.amqp_url)
    try:
        for tenant in (QUIET, NOISY):
            await apply_route(connection, topology, Route(tenant, TIER, dedicated=False))
    finally:
        await connection.close()


async def drive(env: r.BenchEnv, args: argparse.Namespace) -> dict[str, Any]:
    """Phase 1 then phase 2; returns B's message ids per phase and the deepest ready count seen."""
    quiet, noisy = Source(QUIET), Source(NOISY)
    phases: dict[str, list[uuid.UUID]] = {"alone": [], "flood": []}
    deepest = 0
    conn = await asyncpg.connect(env.dsn)
    connection = await aio_pika.connect(env.amqp_url)
    try:
        channel = await connection.channel()
        queue_name = Topology.from_settings(env.settings()).tier_queue(TIER)
        for phase, flood in (("alone", 0), ("flood", args.ratio)):
            start = time.perf_counter()
            tick = 0
            while time.perf_counter() - start < args.seconds:
                rows = quiet.rows(1) + noisy.rows(flood)
                await conn.copy_records_to_table("outbox", records=rows, columns=COLUMNS)
                phases[phase].append(rows[0][0])
                if tick % 5 == 0:
                    queue = await channel.declare_queue(queue_name, passive=True)
                    deepest = max(deepest, int(queue.declaration_result.message_count or 0))
                tick += 1
                await asyncio.sleep(max(0.0, start + tick * args.interval - time.perf_counter()))
    finally:
        await connection.close()
        await conn.close()
    return {"phases": phases, "deepest": deepest, "noisy": noisy.seq}


async def wait_processed(env: r.BenchEnv, ids: list[uuid.UUID], timeout: float) -> None:
    conn = await asyncpg.connect(env.dsn)
    try:
        deadline = time.monotonic() + timeout
        while True:
            n = await conn.fetchval("SELECT count(*) FROM ledger WHERE message_id = ANY($1::uuid[])", ids)
            if n >= len(ids):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {n} of B's {len(ids)} payments processed after {timeout:.0f} s")
            await asyncio.sleep(0.5)
    finally:
        await conn.close()


def percentile(sorted_values: list[float], q: float) -> float:
    k = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[k]


async def latencies(env: r.BenchEnv, ids: list[uuid.UUID]) -> dict[str, float]:
    conn = await asyncpg.connect(env.dsn)
    try:
        rows = await conn.fetch(
            "SELECT extract(epoch FROM l.booked_at - o.accepted_at) * 1000 AS ms FROM outbox o"
            " JOIN ledger l USING (tenant_id, message_id) WHERE o.message_id = ANY($1::uuid[])",
            ids,
        )
    finally:
        await conn.close()
    lat = sorted(float(x["ms"]) for x in rows)
    return {
        "n": len(lat),
        "p50": percentile(lat, 0.5),
        "p95": percentile(lat, 0.95),
        "p99": percentile(lat, 0.99),
        "max": lat[-1],
    }


async def one_mode(args: argparse.Namespace, fair: bool, logs: Path) -> dict[str, Any]:
    async with r.fresh_env("fairness", keep=args.keep) as env:
        await prepare(env)
        extra = {"REMIT_RELAY_FAIR_SHARE": str(fair).lower(), "REMIT_RELAY_QUEUE_HIGH_WATERMARK": str(args.watermark)}
        mode = "fair" if fair else "fifo"
        consumer = ServiceProcess.consumer(env.service_env(), logs / f"fairness-{mode}-consumer.log")
        relay = ServiceProcess.relay(env.service_env(**extra), logs / f"fairness-{mode}-relay.log")
        try:
            await asyncio.sleep(args.settle)  # both processes up and consuming
            driven = await drive(env, args)
            b_ids = driven["phases"]["alone"] + driven["phases"]["flood"]
            await wait_processed(env, b_ids, args.timeout)
        finally:
            relay.stop()
            consumer.stop()
        alone = await latencies(env, driven["phases"]["alone"][args.warmup :])
        flood = await latencies(env, driven["phases"]["flood"])
    return {
        "mode": mode,
        "alone": alone,
        "flood": flood,
        "ratio": flood["p99"] / alone["p99"],
        "deepest": driven["deepest"],
        "noisy": driven["noisy"],
    }


def report(args: argparse.Namespace, results: list[dict[str, Any]], machine: str) -> str:
    rate_b = 1 / args.interval
    rows = []
    for res in results:
        for phase in ("alone", "flood"):
            x = res[phase]
            rows.append(
                f"| {res['mode']} | {'B alone' if phase == 'alone' else 'A floods'} | {x['n']:,} | "
                f"{x['p50']:.0f} | {x['p95']:.0f} | {x['p99']:.0f} | {x['max']:.0f} |"
            )
    verdicts = "\n".join(
        f"| {res['mode']} | {res['ratio']:.2f}x | {res['deepest']:,} | "
        f"{'**PASS**' if res['ratio'] <= 2 else '**MISS**' if res['mode'] == 'fair' else 'MISS (for the record)'} |"
        for res in results
    )
    return f"""{machine}

`.venv/bin/python bench/fairness_bench.py --seconds {args.seconds:g} --interval {args.interval:g} --ratio \
{args.ratio} --watermark {args.watermark}`: tenants A (`noisy`) and B (`quiet`), both in the `{TIER}` tier, share
`payments.work.{TIER}` (3 workers, default prefetch); real consumer and relay processes, fresh database and vhost
per mode. Phase 1: B alone inserts one payment into the outbox every {args.interval * 1000:.0f} ms
({rate_b:g}/s) for {args.seconds:g} s. Phase 2: B keeps that rate and A inserts {args.ratio}x as many
({rate_b * args.ratio:,.0f}/s, {args.ratio} rows per tick) for {args.seconds:g} s. Latency = `ledger.booked_at`
(start of the consumer's commit transaction) minus `outbox.accepted_at`, i.e. submit-to-processed including the
relay; the first {args.warmup} payments of phase 1 are dropped as warm-up. Modes: **fair** = the relay's fair
selection + backpressure (high-watermark {args.watermark} ready messages); **fifo** = the previous relay
(`REMIT_RELAY_FAIR_SHARE=false`: outbox_id order, no backpressure).

| relay | phase | B's payments | p50 ms | p95 ms | p99 ms | max ms |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}

| relay | p99(A floods) / p99(B alone) | deepest ready count seen in `payments.work.{TIER}` | bar: <= 2x |
|---|---|---|---|
{verdicts}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    parser.add_argument("--interval", type=float, default=0.1, help="seconds between two of B's payments")
    parser.add_argument("--ratio", type=int, default=100, help="A's rate as a multiple of B's")
    parser.add_argument("--watermark", type=int, default=200, help="relay high-watermark (ready messages)")
    parser.add_argument("--warmup", type=int, default=10, help="B's first payments left out of phase 1")
    parser.add_argument("--settle", type=float, default=4.0, help="seconds for the processes to start")
    parser.add_argument("--timeout", type=float, default=600.0, help="most seconds to wait for B's payments")
    parser.add_argument("--modes", default="fair,fifo", help="fair, fifo or both")
    parser.add_argument("--logs", type=Path, default=Path("/tmp"))
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args()
    machine = r.machine_details()
    results = [asyncio.run(one_mode(args, mode == "fair", args.logs)) for mode in args.modes.split(",")]
    text = r.with_notes(report(args, results, machine), "fairness")
    print(text)
    if not args.no_write:
        r.write_section("Fairness", text)
        print(f"wrote the Fairness section of {r.DOC}")


if __name__ == "__main__":
    main()

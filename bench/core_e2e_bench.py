"""End-to-end throughput and latency of remit booking into the external core, against the core's own ceiling
and the in-process ledger, in one run (issue 35; docs/benchmarks.md "External core").

Two variants of the same real consumer process (`faststream run app.main:app`, group commit, the enterprise
pool):

  ledger  REMIT_CORE_BANKING_URL unset: payments are booked into remit's own `ledger` table, in the
          consumer's transaction (the embedded default)
  core    REMIT_CORE_BANKING_URL set to the reference core (`python -m corebank serve`, its own process and
          its own database) on loopback: each flush sends POST /transfers/batch inside remit's transaction,
          and remit records the core's transfer ids and a `ledger` row per booked transfer

The payments are published straight to remit's `payments` exchange (remit's AMQP properties, confirmed,
persistent), not by the outbox relay: the relay is the same in both variants and is measured on its own
(bench/relay_bench.py); here it would only add a third process competing for the two cores.

and a reference without remit:

  plain   the core's own ceiling: a plain client (httpx, --plain-senders concurrent senders, one pooled
          connection each) sends the same number of transfers, between the same accounts, in batches of
          remit's commit batch max, to the same core; timed from the first request to the last answer

Before the rounds, --warmup-messages payments go through the core once each way, untimed: the first round of a
cold core (new connections, statements prepared against tables analyzed while empty) ran at a third of the
others, for remit and the plain client alike, and it is not the state a deployment's core is in.

Phase 1, throughput: per round, each variant in turn (the order alternates between rounds) drains
--messages pre-published payments; the drain is timed from the first `ledger` row to the N-th. The bar is
remit through the core as a share of the core's own ceiling (core / plain). The
payments spread over --debtors debtor and as many creditor accounts, all opened in the core with enough
balance that nothing is refused (a single debtor would make every batch wait for the previous one's row
lock: `--debtors 1` measures that case).

Phase 2, latency: open-loop publishing at --load of the core variant's median drain rate, for --seconds, for
each variant at the same rate. In this bench's own database `ledger.booked_at` defaults to
clock_timestamp() instead of now(), so it is the moment the row was inserted: for the core variant, after
the core answered. Latency = booked_at - the send time (the commit's fsync is not included, in either
variant). The consumer's /metrics give the stage breakdown (remit_batch_stage_seconds) and the core's
share (remit_core_request_seconds: time inside each HTTP request).

Between drains (never inside one) the core's database gets `VACUUM ANALYZE`, standing in for autovacuum, which
this machine's PostgreSQL runs without (CI's /etc/postgresql/15/main/conf.d/90-ci.conf sets autovacuum = off).
Without it the core's `transfers` table is never analyzed, and the plan its connections cached while it was
empty (a sequential scan for the idempotency look-up, `idempotency_key = ANY($1)`) stays: 118 ms per look-up of
128 keys at 60,000 transfers against 0.4 ms with statistics, so the core's rate fell round after round.
--no-vacuum leaves it out (the earlier runs' setting).

Phase 3 (--profile): one more drain of each variant under `py-spy record` (the consumer, and for the core
variant the core too), not counted in the ratios; the top functions by CPU time are printed and written
beside the logs in /tmp/remit-bench-logs.
"""

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import _report as r
import asyncpg
import httpx
import uuid6
from latency_bench import paced_publish, percentile, wait_ledger
from prometheus_client.parser import text_string_to_metric_families

from app.messaging.topology import Topology
from app.settings import EXTERNAL_CORE_FLUSHES
from tests.utils.corebank import (
    Acct,
    CoreBank,
    create_corebank_database,
    dsn,
    open_account,
    start_corebank,
    transfer,
    wait_ready,
)
from tests.utils.factories import make_wire_dict
from tests.utils.services import drop_database

LOGS = Path("/tmp/remit-bench-logs")
LOGS.mkdir(exist_ok=True)
VARIANTS = ("ledger", "core")  # remit's consumer, each way
PLAIN = "plain"  # the core alone, from a plain client
RICH = 10**15  # a debtor's opening balance: no bench run can spend it


# ---------------------------------------------------------------- payments and accounts


def make_payments(n: int, pairs: list[tuple[Acct, Acct]]) -> list[r.Payment]:
    """n wire bodies like bench/_report.make_payments, payment i from pairs[i % len(pairs)]'s debtor to its
    creditor (AUD, 1,500.00)."""
    template = make_wire_dict(tenant_id=r.TENANT, correlation_id=r.CORRELATION_ID)
    out = []
    for i in range(n):
        debtor, creditor = pairs[i % len(pairs)]
        message_id = uuid.UUID(int=uuid6.uuid7().int)
        wire = {
            **template,
            "message_id": str(message_id),
            "payment_reference": f"PAY-BENCH-{i:012d}-{message_id.hex[-8:]}",
            "debtor_bsb": debtor.bsb,
            "debtor_account": debtor.number,
            "creditor_bsb": creditor.bsb,
            "creditor_account": creditor.number,
        }
        out.append(r.Payment(message_id, wire["payment_reference"], json.dumps(wire, separators=(",", ":")).encode()))
    return out


async def open_pairs(core: CoreBank, n: int) -> list[tuple[Acct, Acct]]:
    async with core.client(timeout=30) as client:
        return [(await open_account(client, RICH), await open_account(client)) for _ in range(n)]


@contextlib.asynccontextmanager
async def reference_core(pool_size: int | None) -> AsyncIterator[CoreBank]:
    """The reference core as its own process on a free port, on its own fresh database (dropped at the end)."""
    database_url = await create_corebank_database()
    if pool_size:
        os.environ["COREBANK_POOL_SIZE"] = str(pool_size)  # the child's environment (start_corebank copies it)
    core = start_corebank(database_url, LOGS / "core-e2e-corebank.log", faults=False)
    try:
        await wait_ready(core)
        yield core
    finally:
        core.process.stop()
        await drop_database(database_url)


async def stand_in_for_autovacuum(core: CoreBank, args: argparse.Namespace) -> None:
    """What autovacuum would have done in the core's database by now (see the module's docstring)."""
    if args.no_vacuum:
        return
    conn = await asyncpg.connect(dsn(core.database_url))
    try:
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


# ---------------------------------------------------------------- the consumer and py-spy


def spy(pid: int, name: str) -> subprocess.Popen[bytes]:
    """py-spy on a process (CPU samples only: an event loop waiting in epoll is idle, not counted)."""
    out = LOGS / f"core-e2e-{name}-profile.txt"
    out.unlink(missing_ok=True)
    command = [str(Path(sys.executable).parent / "py-spy"), "record", "--pid", str(pid), "--rate", "100"]
    command += ["--format", "raw", "--output", str(out), "--nonblocking"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def start_spies(pids: dict[str, int], spies: list[subprocess.Popen[bytes]]) -> None:
    spies.extend(spy(pid, name) for name, pid in pids.items())


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class Consumer:
    proc: subprocess.Popen[bytes]
    port: int


@contextlib.asynccontextmanager
async def consumer(env: r.BenchEnv, args: argparse.Namespace, core: CoreBank | None) -> AsyncIterator[Consumer]:
    """remit's consumer as its own process on a free port, booking into `core` (or the in-process ledger)."""
    extra = {"REMIT_PREFETCH": str(args.prefetch), "REMIT_COMMIT_BATCH_MAX": str(args.commit_batch_max)}
    # remit's setting, per variant: the reference is the ledger at its own best setting, not the core's
    flushes = args.commit_flushes if core is not None else args.ledger_commit_flushes or args.commit_flushes
    if flushes:
        extra["REMIT_COMMIT_FLUSHES"] = str(flushes)
    if core is not None:
        extra.update(core.remit_env())  # its URL and remit's token
        extra["REMIT_CORE_BANKING_POOL_SIZE"] = str(args.core_pool)
        extra["REMIT_CORE_BANKING_PARALLEL_REQUESTS"] = str(args.core_parallel)
    command, port = r.remit_consumer()
    name = "core" if core else "ledger"
    with (LOGS / f"core-e2e-remit-{name}.log").open("ab") as log:
        proc = subprocess.Popen(  # noqa: ASYNC220
            command, env=env.service_env(**extra), cwd=r.ROOT, stdout=log, stderr=log
        )
        try:
            yield Consumer(proc, port)
        finally:
            stop(proc)


async def drain(
    env: r.BenchEnv,
    n: int,
    proc: subprocess.Popen[bytes],
    on_first: Callable[[], None] = lambda: None,
    stall_seconds: float = 60,
) -> float:
    """msg/s from the first `ledger` row to the n-th; on_first() runs when the first row is seen."""
    conn = await asyncpg.connect(env.dsn)
    try:
        t0, c0, last, last_change = 0.0, 0, -1, time.monotonic()
        while True:
            count = int(await conn.fetchval("SELECT count(*) FROM ledger"))
            now = time.perf_counter()
            if count and not t0:
                t0, c0 = now, count
                on_first()
            if count >= n:
                return (n - c0) / (now - t0)
            if count != last:
                last, last_change = count, time.monotonic()
            if proc.poll() is not None:
                raise RuntimeError(f"the consumer exited with {proc.returncode}; see {LOGS}/core-e2e-remit-*.log")
            if time.monotonic() - last_change > stall_seconds:
                attempts = await conn.fetchval("SELECT count(*) FROM delivery_attempts")
                raise RuntimeError(f"stalled at {count}/{n} (delivery_attempts={attempts})")
            await asyncio.sleep(0.05)
    finally:
        await conn.close()


# ---------------------------------------------------------------- /metrics histograms

Buckets = dict[str, list[tuple[float, float]]]  # label value -> [(upper bound s, cumulative count)]


@dataclass
class Scrape:
    buckets: dict[str, Buckets] = field(default_factory=dict)  # metric -> label value -> buckets
    sums: dict[tuple[str, str], float] = field(default_factory=dict)  # (metric, label value) -> sum

    def quantile(self, before: "Scrape", metric: str, label: str, q: float) -> float:
        """The q-quantile between two scrapes as its histogram bucket's upper bound, in ms (nan: no samples)."""
        old = dict(before.buckets.get(metric, {}).get(label, []))
        counts = [(b, n - old.get(b, 0.0)) for b, n in sorted(self.buckets.get(metric, {}).get(label, []))]
        total = counts[-1][1] if counts else 0.0
        return next((b * 1000 for b, n in counts if total and n >= q * total), float("nan"))

    def count(self, before: "Scrape", metric: str, label: str) -> float:
        def last(s: Scrape) -> float:
            rows = sorted(s.buckets.get(metric, {}).get(label, []))
            return rows[-1][1] if rows else 0.0

        return last(self) - last(before)

    def mean(self, before: "Scrape", metric: str, label: str) -> float:
        n = self.count(before, metric, label)
        total = self.sums.get((metric, label), 0.0) - before.sums.get((metric, label), 0.0)
        return total / n * 1000 if n else float("nan")


LABELS = {"remit_batch_stage_seconds": "stage", "remit_core_request_seconds": "route"}


async def scrape(port: int) -> Scrape:
    async with httpx.AsyncClient(timeout=10) as client:
        text = (await client.get(f"http://127.0.0.1:{port}/metrics")).text
    out = Scrape()
    for family in text_string_to_metric_families(text):
        label = LABELS.get(family.name)
        if label is None:
            continue
        for sample in family.samples:
            value = sample.labels[label]
            if sample.name.endswith("_bucket"):
                rows = out.buckets.setdefault(family.name, {}).setdefault(value, [])
                bound = float(sample.labels["le"])
                # remit_core_request_seconds has a second label (result): add its series up
                existing = dict(rows)
                rows[:] = sorted({**existing, bound: existing.get(bound, 0.0) + sample.value}.items())
            elif sample.name.endswith("_sum"):
                out.sums[(family.name, value)] = out.sums.get((family.name, value), 0.0) + sample.value
    return out


# ---------------------------------------------------------------- the phases


@dataclass
class Results:
    loads: list[str] = field(default_factory=list)  # load average before each round
    rates: dict[str, list[float]] = field(default_factory=lambda: {v: [] for v in (*VARIANTS, PLAIN)})
    latency: dict[str, list[dict[str, float]]] = field(default_factory=lambda: {v: [] for v in VARIANTS})
    profiles: dict[str, list[tuple[str, float]]] = field(default_factory=dict)


def load_average() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def order(round_no: int, variants: tuple[str, ...] = VARIANTS) -> tuple[str, ...]:
    return variants if round_no % 2 else variants[::-1]


async def throughput_round(
    env: r.BenchEnv, args: argparse.Namespace, core: CoreBank, pairs: list[tuple[Acct, Acct]], variant: str
) -> float:
    await r.truncate_effects(env)
    await stand_in_for_autovacuum(core, args)
    await r.purge(env, r.work_queue(Topology.from_settings(env.settings())))
    await r.confirmed_publish(env.amqp_url, make_payments(args.messages, pairs))
    async with consumer(env, args, core if variant == "core" else None) as c:
        return await drain(env, args.messages, c.proc)


async def plain_round(args: argparse.Namespace, core: CoreBank, pairs: list[tuple[Acct, Acct]]) -> float:
    """The core's own ceiling: the same transfers (payment i between pairs[i % len(pairs)], 1,500.00 AUD) in batches
    of --commit-batch-max from --plain-senders senders; transfers booked per second, first request to last answer."""
    await stand_in_for_autovacuum(core, args)
    transfers = [
        {**transfer(*pairs[i % len(pairs)], 150_000), "idempotency_key": f"{r.TENANT}:{uuid6.uuid7()}"}
        for i in range(args.messages)
    ]
    size = args.commit_batch_max
    batches = [transfers[i : i + size] for i in range(0, len(transfers), size)]
    booked = 0

    async def sender() -> None:
        nonlocal booked
        async with core.client(timeout=60) as client:  # with remit's token, as every client of the core
            while batches:
                response = await client.post("/transfers/batch", json={"transfers": batches.pop()})
                response.raise_for_status()
                booked += sum(result["status"] == "booked" for result in response.json()["results"])

    started = time.perf_counter()
    await asyncio.gather(*(sender() for _ in range(args.plain_senders)))
    elapsed = time.perf_counter() - started
    if booked != args.messages:
        raise RuntimeError(f"the core booked {booked} of {args.messages} plain transfers")
    return booked / elapsed


async def latency_run(
    env: r.BenchEnv, args: argparse.Namespace, core: CoreBank, pairs: list[tuple[Acct, Acct]], variant: str, rate: float
) -> dict[str, float]:
    await r.truncate_effects(env)
    await stand_in_for_autovacuum(core, args)
    paced = make_payments(int(rate * args.seconds), pairs)
    warm = make_payments(200, pairs)  # the first flushes open connections: not part of the measured phase
    async with consumer(env, args, core if variant == "core" else None) as c:
        await r.confirmed_publish(env.amqp_url, warm)
        conn = await asyncpg.connect(env.dsn)
        try:
            await wait_ledger(conn, len(warm))
            before = await scrape(c.port)
            sent = await paced_publish(env, paced, rate)
            await wait_ledger(conn, len(warm) + len(paced))
            after = await scrape(c.port)
            rows = await conn.fetch("SELECT message_id::text AS id, extract(epoch FROM booked_at) AS at FROM ledger")
        finally:
            await conn.close()
    first = min(sent.values())
    lat = sorted(
        (float(row["at"]) - sent[row["id"]]) * 1000
        for row in rows
        if row["id"] in sent and sent[row["id"]] - first >= args.warmup
    )
    stage, core_route = "remit_batch_stage_seconds", "remit_core_request_seconds"
    result = {
        "rate": rate,
        "n": float(len(lat)),
        "p50": percentile(lat, 0.50),
        "p99": percentile(lat, 0.99),
        "p999": percentile(lat, 0.999),
        "max": lat[-1],
        "core_p50": after.quantile(before, core_route, "transfers_batch", 0.50),
        "core_p99": after.quantile(before, core_route, "transfers_batch", 0.99),
        "core_mean": after.mean(before, core_route, "transfers_batch"),
        "core_requests": after.count(before, core_route, "transfers_batch"),
        "flushes": after.count(before, stage, "commit"),
    }
    for name in ("delivered", "buffered", "processing", "commit_wait", "commit", "settle"):
        result[f"{name}_p99"] = after.quantile(before, stage, name, 0.99)
        result[f"{name}_mean"] = after.mean(before, stage, name)
    return result


def top_functions(path: Path, n: int = 12) -> list[tuple[str, float]]:
    """py-spy's raw (collapsed) stacks: the n functions with the most samples on top of the stack, as %."""
    own: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines() if path.exists() else ():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        own[frames[-1].strip()] += int(count)
        total += int(count)
    return [(frame, 100 * k / total) for frame, k in own.most_common(n)] if total else []


def inclusive(path: Path, markers: dict[str, str]) -> list[tuple[str, float]]:
    """Share of samples whose stack contains each marker (a file or function name), as %."""
    hits: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines() if path.exists() else ():
        stack, _, count = line.rpartition(" ")
        total += int(count)
        for label, marker in markers.items():
            if marker in stack:
                hits[label] += int(count)
    return [(label, 100 * hits[label] / total) for label in markers] if total else []


REMIT_MARKERS = {
    "HTTP adapter (httpx, request + response)": "core_http.py",
    "JSON encode/decode": "json",
    "pydantic validation": "pydantic",
    "SQLAlchemy + asyncpg": "sqlalchemy",
    "aio-pika / aiormq": "aiormq",
    "payment parsing (contracts)": "contracts/",
}
CORE_MARKERS = {
    "FastAPI / starlette routing": "starlette",
    "pydantic validation / serialisation": "pydantic",
    "SQLAlchemy + asyncpg": "sqlalchemy",
    "uvicorn / h11 HTTP": "h11",
    "JSON encode/decode": "json",
}


async def profile_round(
    env: r.BenchEnv, args: argparse.Namespace, core: CoreBank, pairs: list[tuple[Acct, Acct]], res: Results
) -> None:
    for variant in VARIANTS:
        await r.truncate_effects(env)
        await stand_in_for_autovacuum(core, args)
        await r.confirmed_publish(env.amqp_url, make_payments(args.messages, pairs))
        async with consumer(env, args, core if variant == "core" else None) as c:
            pids = {f"remit-{variant}": c.proc.pid}
            if variant == "core":
                pids["corebank"] = core.process.proc.pid
            spies: list[subprocess.Popen[bytes]] = []
            try:  # the spies start at the first booked row: the imports at startup are not the subject
                rate = await drain(env, args.messages, c.proc, partial(start_spies, pids, spies))
            finally:
                for s in spies:
                    stop(s, signal.SIGINT)
        res.profiles[f"remit-{variant} ({rate:,.0f} msg/s under py-spy)"] = [
            *inclusive(LOGS / f"core-e2e-remit-{variant}-profile.txt", REMIT_MARKERS),
            *top_functions(LOGS / f"core-e2e-remit-{variant}-profile.txt"),
        ]
    res.profiles["corebank"] = [
        *inclusive(LOGS / "core-e2e-corebank-profile.txt", CORE_MARKERS),
        *top_functions(LOGS / "core-e2e-corebank-profile.txt"),
    ]


async def bench(args: argparse.Namespace) -> Results:
    os.environ.pop("REMIT_CORE_BANKING_URL", None)  # the ledger variant is the embedded default
    os.environ.pop("REMIT_CORE_BANKING_TOKEN", None)
    res = Results()
    async with r.fresh_env("core_e2e", keep=args.keep) as env, reference_core(args.core_db_pool) as core:
        await r.declare(env)
        await r.scalar(env.dsn, "ALTER TABLE ledger ALTER COLUMN booked_at SET DEFAULT clock_timestamp()")
        pairs = await open_pairs(core, args.debtors)
        if args.warmup_messages:  # not timed: the core's connections, prepared statements and table statistics
            warm = argparse.Namespace(**{**vars(args), "messages": args.warmup_messages})
            await throughput_round(env, warm, core, pairs, "core")
            await plain_round(warm, core, pairs)
        with r.progress() as bar:
            task = bar.add_task("throughput", total=args.runs * 3)
            for round_no in range(1, args.runs + 1):
                res.loads.append(load_average())
                for variant in order(round_no, (*VARIANTS, PLAIN)):
                    if variant == PLAIN:
                        rate = await plain_round(args, core, pairs)
                    else:
                        rate = await throughput_round(env, args, core, pairs, variant)
                    res.rates[variant].append(rate)
                    bar.console.print(f"round {round_no} {variant}: {rate:,.0f} msg/s (load {res.loads[-1]})")
                    bar.advance(task)
            rate = args.rate or r.median(res.rates["core"]) * args.load
            task = bar.add_task(f"latency at {rate:,.0f} msg/s", total=args.latency_runs * 2)
            for run in range(1, args.latency_runs + 1):
                for variant in order(run):
                    one = await latency_run(env, args, core, pairs, variant, rate)
                    res.latency[variant].append(one)
                    bar.console.print(
                        f"latency {run} {variant}: p50 {one['p50']:.1f} p99 {one['p99']:.1f} "
                        f"p999 {one['p999']:.1f} ms; core request p50 {one['core_p50']:.0f} ms"
                    )
                    bar.advance(task)
            if args.profile:
                bar.console.print("profile round (py-spy)")
                await profile_round(env, args, core, pairs, res)
    return res


# ---------------------------------------------------------------- report


def report(args: argparse.Namespace, res: Results, machine: str) -> str:
    ledger, core, plain = res.rates["ledger"], res.rates["core"], res.rates[PLAIN]
    ratios = [b / c for b, c in zip(core, plain, strict=True)]
    ratio = r.median(ratios)
    verdict = "PASS" if ratio >= 0.60 else "MISS"
    rounds = "\n".join(
        f"| {i} | {load} | {' then '.join(order(i, (*VARIANTS, PLAIN)))} | {c:,.0f} | {b:,.0f} | {b / c:.0%} | "
        f"{a:,.0f} | {b / a:.0%} |"
        for i, (load, a, b, c) in enumerate(zip(res.loads, ledger, core, plain, strict=True), start=1)
    )

    def med(variant: str, key: str) -> float:
        return r.median([x[key] for x in res.latency[variant]]) if res.latency[variant] else float("nan")

    lat_rows = "\n".join(
        f"| {v} | {r.fmt_runs([x['rate'] for x in res.latency[v]])} | {med(v, 'n'):,.0f} | "
        f"{med(v, 'p50'):.1f} | {med(v, 'p99'):.1f} | {med(v, 'p999'):.1f} | {med(v, 'max'):.1f} | "
        f"{', '.join(format(x['p99'], '.1f') for x in res.latency[v])} |"
        for v in VARIANTS
    )
    stages = ("delivered", "buffered", "processing", "commit_wait", "commit", "settle")
    stage_rows = "\n".join(
        f"| {s} | {med('ledger', f'{s}_mean'):.1f} | {med('ledger', f'{s}_p99'):g} | "
        f"{med('core', f'{s}_mean'):.1f} | {med('core', f'{s}_p99'):g} |"
        for s in stages
    )
    per_request = med("core", "n") / med("core", "core_requests") if med("core", "core_requests") else float("nan")
    profile = ""
    for name, rows in res.profiles.items():
        profile += f"\n`{name}`: " + "; ".join(f"{frame} {pct:.0f}%" for frame, pct in rows) + ".\n"
    command = (
        f".venv/bin/python bench/core_e2e_bench.py --messages {args.messages} --runs {args.runs} "
        f"--debtors {args.debtors} --seconds {args.seconds} --latency-runs {args.latency_runs} "
        f"--prefetch {args.prefetch} --commit-batch-max {args.commit_batch_max} --core-pool {args.core_pool} "
        f"--core-parallel {args.core_parallel} --warmup-messages {args.warmup_messages}"
        + (f" --commit-flushes {args.commit_flushes}" if args.commit_flushes else "")
        + (f" --ledger-commit-flushes {args.ledger_commit_flushes}" if args.ledger_commit_flushes else "")
        + (" --profile" if args.profile else "")
        + (" --no-vacuum" if args.no_vacuum else "")
    )
    flushes = args.commit_flushes or EXTERNAL_CORE_FLUSHES
    vacuum = (
        "The core's database was left unvacuumed (--no-vacuum)."
        if args.no_vacuum
        else "Before each drain the core's database gets `VACUUM ANALYZE`, standing in for the autovacuum this\n"
        "machine's PostgreSQL runs without (see the bench's docstring)."
    )
    ledger_flushes = args.ledger_commit_flushes or args.commit_flushes or 1
    return f"""{machine}

`{command}`: {args.messages:,} payments per round published straight to remit's `payments` exchange
(confirmed, persistent; not through the outbox relay, which is the same in both variants and measured by
bench/relay_bench.py), spread over {args.debtors} debtor -> creditor account pairs, drained by the real
consumer (`faststream run app.main:app`, enterprise pool, prefetch {args.prefetch}, commit batch max
{args.commit_batch_max}, flushes in flight: {ledger_flushes} for (a), {flushes} for (b))
booking (a) `ledger`: into remit's in-process ledger, (b) `core`: into the reference
core (`python -m corebank serve`, its own process and database, {args.core_pool} pooled HTTP connections from
remit, each flush sent as {args.core_parallel} request(s) side by side) over loopback; and (c) `plain`: the
core's own ceiling, the same {args.messages:,} transfers between the same accounts sent by a plain client
({args.plain_senders} senders, batches of {args.commit_batch_max}) to the same core. Drains are timed
from the first `ledger` row to the last, (c) from the first request to the last answer; rounds interleaved, the
order alternating. {vacuum}

| round | load average before | order | (c) plain transfers/s | (b) core msg/s | (b)/(c) | (a) ledger msg/s | (b)/(a) |
|---|---|---|---|---|---|---|---|
{rounds}
| **median** | | | {r.median(plain):,.0f} | {r.median(core):,.0f} | **{ratio:.0%}** | {r.median(ledger):,.0f} | \
{r.median([b / a for a, b in zip(ledger, core, strict=True)]):.0%} |

| bar | median of the per-round ratios | result |
|---|---|---|
| (b) remit through the core >= 60% of (c) the core's own ceiling | {ratio:.0%} | **{verdict}** |

Publish-to-booked latency, open loop at {args.load:.0%} of (b)'s median drain rate, {args.seconds:g} s per run,
{args.latency_runs} run(s) per variant interleaved, the first {args.warmup:g} s dropped. Booked = the `ledger`
row's insert time (`clock_timestamp()` in this bench's database; for (b) after the core answered), so the
commit's fsync is not included in either:

| variant | paced msg/s | samples | p50 ms | p99 ms | p999 ms | max ms | p99 per run |
|---|---|---|---|---|---|---|---|
{lat_rows}

Where the time goes during the paced phase (the consumer's /metrics, scraped before and after; mean, and p99
as its histogram bucket's upper bound, ms). `processing` includes the whole flush for the batch's worker;
`commit` is one flush (claim, the core call for (b), ledger insert, commit):

| stage | (a) mean | (a) p99 | (b) mean | (b) p99 |
|---|---|---|---|---|
{stage_rows}
| (b) the core's share: POST /transfers/batch (`remit_core_request_seconds`) | | | \
{med("core", "core_mean"):.1f} | {med("core", "core_p99"):g} |

(b) sent {med("core", "core_requests"):,.0f} batch requests for {med("core", "n"):,.0f} payments, about
{per_request:.0f} transfers per request; the core's request p50 {med("core", "core_p50"):g} ms.
{profile}"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=20_000, help="payments per drain (default 20,000)")
    parser.add_argument("--runs", type=int, default=3, help="interleaved throughput rounds (default 3)")
    parser.add_argument("--debtors", type=int, default=100, help="debtor/creditor account pairs (default 100)")
    parser.add_argument("--seconds", type=float, default=20.0, help="paced publishing per latency run")
    parser.add_argument("--latency-runs", type=int, default=1, help="latency runs per variant (default 1)")
    parser.add_argument("--load", type=float, default=0.5, help="fraction of (b)'s median drain rate")
    parser.add_argument("--rate", type=float, default=0.0, help="a fixed paced rate instead of --load")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds of sends left out of the percentiles")
    parser.add_argument("--prefetch", type=int, default=100)
    parser.add_argument("--commit-batch-max", type=int, default=256)
    parser.add_argument("--core-pool", type=int, default=10, help="REMIT_CORE_BANKING_POOL_SIZE (default 10)")
    parser.add_argument("--core-parallel", type=int, default=1, help="REMIT_CORE_BANKING_PARALLEL_REQUESTS (default 1)")
    parser.add_argument(
        "--commit-flushes", type=int, default=0, help="REMIT_COMMIT_FLUSHES for (b) (default: remit's, 8 with a core)"
    )
    parser.add_argument(
        "--ledger-commit-flushes",
        type=int,
        default=0,
        help="REMIT_COMMIT_FLUSHES for (a) (default: --commit-flushes, else remit's, 1 with the ledger)",
    )
    parser.add_argument("--core-db-pool", type=int, default=0, help="COREBANK_POOL_SIZE (default: the core's)")
    parser.add_argument("--plain-senders", type=int, default=4, help="the plain client's concurrent senders")
    parser.add_argument(
        "--warmup-messages",
        type=int,
        default=5_000,
        help="an untimed core drain and plain run of this many before the rounds (0: none); without it the first "
        "core round meets a core whose tables were analyzed empty and whose connections are new",
    )
    parser.add_argument(
        "--no-vacuum", action="store_true", help="no VACUUM ANALYZE of the core's database between drains"
    )
    parser.add_argument("--profile", action="store_true", help="one more drain of each variant under py-spy")
    parser.add_argument("--quick", action="store_true", help="2,000 payments, 1 round, 5 s of latency")
    parser.add_argument("--keep", action="store_true", help="keep remit's database and vhost")
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args()
    if args.quick:
        args.messages, args.runs, args.seconds = 2_000, 1, 5.0
    machine = r.machine_details()
    res = asyncio.run(bench(args))
    text = r.with_notes(report(args, res, machine), "core_e2e")
    print(text)
    if not args.no_write and not args.quick:
        r.write_section("External core", text)
        print(f"wrote the External core section of {r.DOC}")


if __name__ == "__main__":
    main()

"""What the reference core's transfer routes sustain on loopback, in one run (docs/core-banking.md).

The core runs as its own process (`python -m corebank serve`) on a fresh database; this process is the client
(httpx, one pooled connection per sender). Each scenario runs --seconds with --senders concurrent senders:

  batch-spread   POST /transfers/batch of --batch transfers; each sender between its own pair of accounts
                 (no account is locked by two senders: the route's own cost)
  batch-hot      the same, but every transfer debits one account (a corporate debtor: each batch waits for
                 the previous one's lock on it, the worst case for remit's group commit)
  single         POST /transfers, one transfer per request (what the batch form saves)

Rounds are interleaved; the median transfers/s of --runs rounds and the request latency (p50, p99) go to the
`## Core banking` section of docs/benchmarks.md.
"""

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import _report as r
import httpx

from tests.utils.corebank import (
    Acct,
    CoreBank,
    create_corebank_database,
    fresh_key,
    open_account,
    start_corebank,
    transfer,
    wait_ready,
)
from tests.utils.services import drop_database

Send = Callable[[httpx.AsyncClient, int], Awaitable[int]]


def batch_sender(pairs: list[tuple[Acct, Acct]], size: int) -> Send:
    async def send(client: httpx.AsyncClient, sender: int) -> int:
        debtor, creditor = pairs[sender % len(pairs)]
        batch = [{**transfer(debtor, creditor, 1), "idempotency_key": fresh_key()} for _ in range(size)]
        response = await client.post("/transfers/batch", json={"transfers": batch})
        response.raise_for_status()
        return sum(result["status"] == "booked" for result in response.json()["results"])

    return send


def single_sender(pairs: list[tuple[Acct, Acct]]) -> Send:
    async def send(client: httpx.AsyncClient, sender: int) -> int:
        debtor, creditor = pairs[sender % len(pairs)]
        response = await client.post(
            "/transfers", json=transfer(debtor, creditor, 1), headers={"Idempotency-Key": fresh_key()}
        )
        response.raise_for_status()
        return int(response.json()["status"] == "booked")

    return send


async def measure(core: CoreBank, send: Send, senders: int, seconds: float) -> tuple[float, list[float]]:
    """(booked transfers per second, request latencies in seconds)."""
    latencies: list[float] = []
    booked = 0
    deadline = time.monotonic() + seconds

    async def loop(n: int) -> None:
        nonlocal booked
        async with core.client(timeout=60) as client:  # with remit's token, as every client of the core
            while time.monotonic() < deadline:
                started = time.monotonic()
                done = await send(client, n)  # not `booked += await ...`: that reads `booked` before the await
                booked += done
                latencies.append(time.monotonic() - started)

    started = time.monotonic()
    await asyncio.gather(*(loop(n) for n in range(senders)))
    return booked / (time.monotonic() - started), latencies


async def bench(args: argparse.Namespace, log: Path) -> dict[str, list[tuple[float, list[float]]]]:
    database_url = await create_corebank_database()
    core = start_corebank(database_url, log, faults=False)
    try:
        await wait_ready(core)
        async with core.client(timeout=30) as client:
            rich = 10**15
            spread = [(await open_account(client, rich), await open_account(client)) for _ in range(args.senders)]
            hot_debtor = await open_account(client, rich)
            hot = [(hot_debtor, await open_account(client)) for _ in range(args.senders)]
        scenarios: dict[str, Send] = {
            "batch-spread": batch_sender(spread, args.batch),
            "batch-hot": batch_sender(hot, args.batch),
            "single": single_sender(spread),
        }
        results: dict[str, list[tuple[float, list[float]]]] = {name: [] for name in scenarios}
        for _ in range(args.runs):
            for name, send in scenarios.items():
                results[name].append(await measure(core, send, args.senders, args.seconds))
                print(f"{name}: {results[name][-1][0]:,.0f} transfers/s")
        return results
    finally:
        core.process.stop()
        await drop_database(database_url)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(args: argparse.Namespace, results: dict[str, list[tuple[float, list[float]]]], machine: str) -> str:
    rows = []
    for name, runs in results.items():
        rates = [rate for rate, _ in runs]
        latencies = [x for _, lat in runs for x in lat]
        rows.append(
            f"| {name} | {statistics.median(rates):,.0f} | {', '.join(f'{x:,.0f}' for x in rates)} "
            f"| {percentile(latencies, 0.5) * 1000:.1f} | {percentile(latencies, 0.99) * 1000:.1f} |"
        )
    return (
        f"`bench/corebank_bench.py --senders {args.senders} --batch {args.batch} --seconds {args.seconds} "
        f"--runs {args.runs}`: the reference core (`python -m corebank serve`, one process) on loopback, "
        "booked transfers per second and request latency.\n\n"
        "| scenario | transfers/s (median) | runs | request p50 ms | request p99 ms |\n|---|---|---|---|---|\n"
        + "\n".join(rows)
        + f"\n\n{machine}\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--senders", type=int, default=4, help="concurrent senders (default 4)")
    parser.add_argument("--batch", type=int, default=256, help="transfers per batch (default 256, remit's group)")
    parser.add_argument("--seconds", type=float, default=10.0, help="per scenario and round (default 10)")
    parser.add_argument("--runs", type=int, default=3, help="interleaved rounds; medians are reported")
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args()
    machine = r.machine_details()
    results = asyncio.run(bench(args, Path("/tmp") / f"corebank-bench-{time.time_ns()}.log"))
    text = r.with_notes(report(args, results, machine), "corebank")
    print(text)
    if not args.no_write:
        r.write_section("Core banking", text)


if __name__ == "__main__":
    main()

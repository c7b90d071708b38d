"""The long chaos run: >= 100 consumer kills plus real broker restarts and database disruptions.

Same rig and ledger check as the short run in the test suite (tests/chaos/rig.py), scaled up:
tens of thousands of payments over ~10 minutes of faults, including `rabbitmqctl stop_app` /
`start_app` (this disrupts EVERY vhost on the local broker: don't run it beside other work).
The counts go to the results section of docs/reliability.md (between the chaos_long markers).

    .venv/bin/python bench/chaos_long.py                  # fresh seed, ~15 minutes
    .venv/bin/python bench/chaos_long.py --seed 1234      # replay a run's fault plan and workload
    .venv/bin/python bench/chaos_long.py --window 120 --consumer-kills 20 --no-write   # a quick look

Exit code 0 when every invariant held, 1 otherwise (the database and vhost are then kept).
"""

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import httpx
import psutil
from rich.console import Console
from rich.live import Live
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.chaos.config import FAULT_KINDS, ChaosConfig, new_seed  # noqa: E402
from tests.chaos.rig import ChaosResult, ChaosRig  # noqa: E402
from tests.utils.services import MANAGEMENT_AUTH, MANAGEMENT_URL, PG_ADMIN_DSN  # noqa: E402

DOC = ROOT / "docs" / "reliability.md"
BEGIN, END = "<!-- BEGIN chaos_long results -->", "<!-- END chaos_long results -->"
console = Console()


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=None, help="replay a run (default: a fresh seed, printed)")
    p.add_argument("--window", type=float, default=600.0, help="seconds over which faults and batches are spread")
    p.add_argument("--batches", type=int, default=110, help="batches submitted during the window")
    p.add_argument("--rows", type=int, default=200, help="payments per batch")
    p.add_argument("--tenants", type=int, default=6)
    p.add_argument("--consumers", type=int, default=2)
    p.add_argument("--consumer-kills", type=int, default=100, help="plain SIGKILLs of a consumer")
    p.add_argument("--commit-kills", type=int, default=30, help="consumers armed to SIGKILL after commit, before ack")
    p.add_argument("--relay-kills", type=int, default=10)
    p.add_argument("--publish-kills", type=int, default=8, help="relays armed to SIGKILL after publish, before mark")
    p.add_argument("--pauses", type=int, default=10, help="SIGSTOP/SIGCONT of a consumer (2-15 s)")
    p.add_argument("--pg-terminates", type=int, default=12, help="pg_terminate_backend of every test db connection")
    p.add_argument("--amqp-closes", type=int, default=6, help="force-close the vhost's AMQP connections")
    p.add_argument("--broker-restarts", type=int, default=4, help="rabbitmqctl stop_app / start_app (whole broker)")
    p.add_argument("--settle-timeout", type=float, default=240.0)
    p.add_argument("--logs", type=Path, default=Path(tempfile.gettempdir()) / "remit-chaos")
    p.add_argument("--no-write", action="store_true", help="do not write docs/reliability.md")
    return p.parse_args()


def config_from(args: argparse.Namespace, seed: int) -> ChaosConfig:
    return ChaosConfig(
        seed=seed,
        logs=args.logs / f"seed-{seed}",
        tenants=args.tenants,
        batches=args.batches,
        rows_per_batch=args.rows,
        consumers=args.consumers,
        fault_window=args.window,
        faults={
            "consumer_kill": args.consumer_kills,
            "consumer_kill_at_commit": args.commit_kills,
            "relay_kill": args.relay_kills,
            "relay_kill_at_publish": args.publish_kills,
            "consumer_pause": args.pauses,
            "pg_terminate": args.pg_terminates,
            "amqp_close": args.amqp_closes,
            "broker_restart": args.broker_restarts,
        },
        pause_seconds=(2.0, 15.0),
        broker_down_seconds=(1.0, 8.0),
        settle_timeout=args.settle_timeout,
        expired_batches=2,
    )


def status_table(rig: ChaosRig, progress: dict[str, int], started: float) -> Table:
    table = Table(title=f"chaos_long seed {rig.config.seed}: {rig.phase}", show_header=False)
    table.add_row("elapsed", f"{time.monotonic() - started:.0f} s")
    table.add_row("faults", ", ".join(f"{k} {v}" for k, v in rig.faults.items() if v) or "none yet")
    table.add_row("unexpected exits", str(len(rig.unexpected)))
    table.add_row("batches submitted", str(rig.batches_submitted))
    for key in ("accepted", "settled", "unpublished"):
        table.add_row(key, str(progress.get(key, "?")))
    return table


async def run(config: ChaosConfig) -> ChaosResult:
    rig = ChaosRig(config, log=lambda line: console.log(line))
    started = time.monotonic()
    task = asyncio.create_task(rig.run())
    with Live(status_table(rig, {}, started), console=console, refresh_per_second=2, transient=True) as live:
        while not task.done():
            live.update(status_table(rig, await rig.progress(), started))
            await asyncio.wait({task}, timeout=2.0)
    return task.result()


def results_table(result: ChaosResult) -> Table:
    table = Table(title=f"chaos_long seed {result.seed}: {'PASSED' if result.ok else 'FAILED'}")
    table.add_column("what")
    table.add_column("count", justify="right")
    for key, value in result.summary_rows():
        table.add_row(key, value)
    return table


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


async def machine() -> dict[str, str]:
    cpu = cpu_model()
    rabbit = "?"
    try:
        async with httpx.AsyncClient(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH, timeout=5) as client:
            overview = (await client.get("/api/overview")).json()
            rabbit = f"{overview.get('rabbitmq_version')} (Erlang {overview.get('erlang_version')})"
    except httpx.HTTPError:
        pass
    conn = await asyncpg.connect(PG_ADMIN_DSN)
    try:
        postgres = str(await conn.fetchval("SHOW server_version"))
    finally:
        await conn.close()
    return {
        "CPU": f"{cpu}, {os.cpu_count()} cores",
        "memory": f"{psutil.virtual_memory().total / 2**30:.0f} GiB",
        "OS": f"{platform.system()} {platform.release()}",
        "Python": platform.python_version(),
        "RabbitMQ": rabbit,
        "PostgreSQL": postgres,
    }


def markdown(result: ChaosResult, config: ChaosConfig, host: dict[str, str], when: datetime) -> str:
    lines = [
        BEGIN,
        f"### Run of {when:%Y-%m-%d %H:%M} UTC: {'passed' if result.ok else 'FAILED'}",
        "",
        f"Seed **{result.seed}** (`.venv/bin/python bench/chaos_long.py --seed {result.seed}` replays the fault plan "
        f"and workload). {config.tenants} tenants, {config.consumers} consumers, {config.batches} batches of "
        f"{config.rows_per_batch} payments plus {config.expired_batches} back-dated (expired) batches, faults spread "
        f"over {config.fault_window:.0f} s.",
        "",
        "Machine: " + "; ".join(f"{k} {v}" for k, v in host.items()) + ".",
        "",
        "| what | count |",
        "|---|---:|",
    ]
    lines += [f"| {k} | {v} |" for k, v in result.summary_rows()]
    consumer_kills = result.faults["consumer_kill"] + result.faults["consumer_kill_at_commit"]
    lines += [
        "",
        f"Consumer SIGKILLs in total: **{consumer_kills}**; broker restarts: **{result.faults['broker_restart']}**; "
        f"PostgreSQL disruptions: **{result.faults['pg_terminate']}**.",
        "",
    ]
    problems = result.problems()
    if problems:
        lines += ["Violations (first 20):", ""] + [f"- {p}" for p in problems[:20]] + [""]
    else:
        lines += ["Every invariant held: no message lost, none paid twice, every sum conserved.", ""]
    if result.unexpected_exits:
        lines += ["Unexpected process exits (log tails trimmed):", ""]
        lines += [f"- {e.split(': ...', 1)[0]}" for e in result.unexpected_exits[:10]] + [""]
    if result.drill:
        caught = sum(result.drill.values())
        drilled = f"{caught} of {len(result.drill)} caught"
        lines += [f"Drill (damage applied to the final ledger, then rolled back): {drilled}.", ""]
    lines.append(END)
    return "\n".join(lines)


def write_doc(block: str, begin: str = BEGIN, end: str = END) -> None:
    """Replace what is between the markers (bench/chaos_core_long.py passes its own)."""
    text = DOC.read_text() if DOC.exists() else "# Reliability\n\n## Results\n\n"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    DOC.write_text(text)


def main() -> int:
    args = parse_args()
    seed = args.seed if args.seed is not None else new_seed()
    config = config_from(args, seed)
    if config.faults.get("broker_restart"):
        console.print("[yellow]this run restarts the local RabbitMQ broker: every vhost on it is disrupted[/]")
    when = datetime.now(UTC)
    result = asyncio.run(run(config))
    console.print(results_table(result))
    for problem in result.problems()[:20]:
        console.print(f"[red]VIOLATION[/] {problem}")
    for name, hit in result.drill.items():
        console.print(f"drill: {name}: {'caught' if hit else '[red]MISSED[/]'}")
    if not result.ok:
        console.print(f"[red]kept database {result.database} and vhost {result.vhost}; logs in {config.logs}[/]")
    if not args.no_write:
        write_doc(markdown(result, config, asyncio.run(machine()), when))
        console.print(f"results written to {DOC.relative_to(ROOT)}")
    kinds = [k for k in FAULT_KINDS if config.faults.get(k)]
    console.print(f"fault kinds exercised: {', '.join(kinds)}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())

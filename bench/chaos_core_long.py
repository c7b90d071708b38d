"""The long chaos run against the external core (issue 14, item 5): thousands of payments through remit's
consumers into the reference core while a fault plan drawn by Hypothesis from the seed runs (tests/chaos/
core_plan.py `long_shape`): the core's answers dropped after its commit, the core down for 30 s and restarted,
consumers SIGKILLed anywhere and between the core's commit and remit's, remit's PostgreSQL connections
terminated and its vhost's AMQP connections force-closed; with --restarts, real `rabbitmqctl stop_app/start_app`
and `pg_ctlcluster restart` too (they disrupt EVERY database and vhost on the machine: not beside other work).
Same run and end checks as the short test (tests/chaos/core_run.py). The counts go to docs/reliability.md
(between the chaos_core_long markers).

    .venv/bin/python bench/chaos_core_long.py --restarts          # fresh seed, 10,000 payments, ~10 minutes
    .venv/bin/python bench/chaos_core_long.py --seed 1234 --restarts --no-write   # replay a run
    .venv/bin/python bench/chaos_core_long.py --payments 2000 --window 120 --no-write   # a quick look

Exit code 0 when every check held, 1 otherwise (remit's database, the core's and the vhost are then kept).
"""

import argparse
import asyncio
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chaos_long import DOC, console, machine, write_doc  # noqa: E402  (a sibling: scripts run as `python bench/x.py`)

from app.resources import uow_factory_for  # noqa: E402
from app.storage.engine import make_engine  # noqa: E402
from app.storage.migrations import upgrade_to_head  # noqa: E402
from tests.chaos.config import new_seed  # noqa: E402
from tests.chaos.core_plan import CorePlan, draw_plan, long_shape  # noqa: E402
from tests.chaos.core_run import CoreChaos, CoreChaosConfig, CoreChaosResult  # noqa: E402
from tests.utils.corebank import create_corebank_database  # noqa: E402
from tests.utils.services import ServiceEnv, create_database, create_vhost, delete_vhost, drop_database  # noqa: E402

BEGIN, END = "<!-- BEGIN chaos_core_long results -->", "<!-- END chaos_core_long results -->"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seed", type=int, default=None, help="replay a run (default: a fresh seed, printed)")
    p.add_argument("--payments", type=int, default=10_000)
    p.add_argument("--window", type=float, default=420.0, help="seconds over which the faults are spread")
    p.add_argument("--publish", type=float, default=400.0, help="seconds over which the payments are published")
    p.add_argument("--tenants", type=int, default=6)
    p.add_argument("--consumers", type=int, default=2)
    p.add_argument("--restarts", action="store_true", help="real broker and PostgreSQL server restarts too")
    p.add_argument("--recover-timeout", type=float, default=600.0)
    p.add_argument("--logs", type=Path, default=Path(tempfile.gettempdir()) / "remit-core-chaos")
    p.add_argument("--no-write", action="store_true", help="do not write docs/reliability.md")
    return p.parse_args()


async def run(config: CoreChaosConfig) -> tuple[CoreChaosResult, str, str, str]:
    database_url = await create_database()
    await upgrade_to_head(database_url)
    vhost = create_vhost()
    core_database_url = await create_corebank_database()
    engine = make_engine(database_url, pool_size=3)
    ok = False
    try:
        env = ServiceEnv(database_url, vhost)
        chaos = CoreChaos(config, env, uow_factory_for(engine), core_database_url, log=lambda line: console.log(line))
        result = await chaos.run()
        ok = result.ok
        return result, database_url, core_database_url, vhost
    finally:
        await engine.dispose()
        if ok:
            await drop_database(database_url)
            await drop_database(core_database_url)
            delete_vhost(vhost)


HELD = (
    "Every check held: exactly one transfer in the core per payment, debits = credits per currency, every balance = "
    "opening + credits - debits, remit's records = the core's journal, nothing dead-lettered or left in a queue."
)
Render = Callable[[CoreChaosResult, dict[str, str], datetime], str]


def results_block(
    markers: tuple[str, str], result: CoreChaosResult, when: datetime, host: dict[str, str], what: str, held: str
) -> str:
    """A run's counts for docs/reliability.md, between `markers`: `what` says what ran, `held` what held."""
    begin, end = markers
    lines = [
        begin,
        f"### Run of {when:%Y-%m-%d %H:%M} UTC: {'passed' if result.ok else 'FAILED'}",
        "",
        what,
        "",
        "Machine: " + "; ".join(f"{k} {v}" for k, v in host.items()) + ".",
        "",
        "| what | count |",
        "|---|---:|",
    ]
    lines += [f"| {k} | {v} |" for k, v in result.summary_rows()]
    lines.append("")
    if result.violations:
        lines += ["Violations:", ""] + [f"- {v}" for v in result.violations[:20]] + [""]
    else:
        lines += [held, ""]
    lines.append(end)
    return "\n".join(lines)


def markdown(
    result: CoreChaosResult, config: CoreChaosConfig, restarts: bool, host: dict[str, str], when: datetime
) -> str:
    replay = f"--seed {result.seed} --payments {config.payments}" + (" --restarts" if restarts else "")
    servers = (
        "real RabbitMQ and PostgreSQL restarts" if restarts else "no server restarts (connection-level faults only)"
    )
    what = (
        f"Seed **{result.seed}** (`.venv/bin/python bench/chaos_core_long.py {replay}` replays the plan and the "
        f"payments). {config.tenants} tenants, {config.consumers} consumers, {config.payments} payments published "
        f"over {config.publish_seconds:.0f} s, faults spread over {config.plan_window:.0f} s; {servers}."
    )
    return results_block((BEGIN, END), result, when, host, what, HELD)


def core_config(args: argparse.Namespace, seed: int, plan: CorePlan, plan_window: float) -> CoreChaosConfig:
    """The run's settings from the command line (--payments, --tenants, --consumers, --publish,
    --recover-timeout, --logs), its logs under a directory of the seed's."""
    logs = args.logs / f"seed-{seed}"
    logs.mkdir(parents=True, exist_ok=True)
    return CoreChaosConfig(
        seed=seed,
        plan=plan,
        logs=logs,
        payments=args.payments,
        tenants=args.tenants,
        consumers=args.consumers,
        publish_seconds=args.publish,
        accounts_per_side=20,
        recover_timeout=args.recover_timeout,
        plan_window=plan_window,
    )


def run_and_report(config: CoreChaosConfig, markers: tuple[str, str], render: Render | None) -> int:
    """Run, print the counts, write render's block between `markers` in docs/reliability.md unless `render` is
    None; 0 when every check held (otherwise the databases and the vhost are kept for a look)."""
    when = datetime.now(UTC)
    result, database_url, core_database_url, vhost = asyncio.run(run(config))
    console.print(result.summary())
    if not result.ok:
        console.print(f"[red]kept {database_url}, {core_database_url} and vhost {vhost}; logs in {config.logs}[/]")
    if render is not None:
        write_doc(render(result, asyncio.run(machine()), when), *markers)
        console.print(f"results written to {DOC.relative_to(ROOT)}")
    return 0 if result.ok else 1


def main() -> int:
    args = parse_args()
    seed = args.seed if args.seed is not None else new_seed()
    config = core_config(args, seed, draw_plan(seed, long_shape(args.window, args.restarts)), args.window)
    if args.restarts:
        console.print("[yellow]this run restarts the local RabbitMQ broker and PostgreSQL server[/]")

    def render(result: CoreChaosResult, host: dict[str, str], when: datetime) -> str:
        return markdown(result, config, args.restarts, host, when)

    return run_and_report(config, (BEGIN, END), None if args.no_write else render)


if __name__ == "__main__":
    sys.exit(main())

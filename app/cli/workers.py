"""`remit workers`: pool status and control (app/tenancy/pool_operations.py does both)."""

import typer
from rich.table import Table

from app.cli.common import console, err_console, friendly_errors, run, with_operator
from app.cli.safe_console import line
from app.settings import get_settings
from app.tenancy.pool_operations import SYNC_SECONDS, Action, PoolStatus, apply_action, pool_status, tiers_of, unmanned

workers_app = typer.Typer(help="Worker pools per tier: status, start, stop, restart.", no_args_is_help=True)
TIER = typer.Option(None, "--tier", help="One tier (default: all).")
NO_PROCESS_EXIT = 1  # a pool that should run has no consumer process: documented in README.md (Worker pools)


def _table(rows: list[PoolStatus]) -> Table:
    table = Table(
        "pool", "tier", "queue", "desired", "processes", "workers", "running", "paused", "messages", "unacked"
    )
    for r in rows:
        table.add_row(
            r.pool,
            r.tier,
            r.queue,
            r.desired_state,
            str(r.processes),
            str(r.workers),
            str(r.running),
            str(r.paused),
            str(r.messages),
            str(r.unacknowledged),
        )
    return table


@workers_app.command("status")
@friendly_errors
def status(tenant: str | None = typer.Option(None, "--tenant", help="Only the pools serving this tenant.")) -> None:
    """Show worker pools: configured and running workers across consumer processes, queue depths. Exits 1
    with a warning when a pool that should run has no consumer process (its queue is not consumed).

    Example: remit workers status            remit workers status --tenant anz
    """
    rows = run(
        with_operator(lambda op: pool_status(op.uow, op.management, op.broker.topology, op.vhost, tenant, "--tenant"))
    )
    console.print(_table(rows))
    if idle := unmanned(rows):
        err_console.print(
            line(
                ("warning:", "bold yellow"),
                f" {', '.join(p.pool for p in idle)}: desired running but no consumer process "
                "reported in the last 15 s, so nothing consumes their queues. Start consumers "
                "(`faststream run app.main:app`), or `remit workers stop --tier <tier>` if that is intended.",
            )
        )
        raise typer.Exit(NO_PROCESS_EXIT)


def _act(action: Action, tier: str | None) -> list[str]:
    tiers = tiers_of(tier, "--tier")
    run(with_operator(lambda op: apply_action(op.uow, action, tiers, get_settings().actor)))
    return tiers


@workers_app.command("start")
@friendly_errors
def start(tier: str | None = TIER) -> None:
    """Start the pools of a tier (or all) in every consumer process. Operators only.

    Example: remit workers start --tier basic
    """
    tiers = _act("start", tier)
    console.print(f"pools {', '.join(tiers)}: running (applied within {SYNC_SECONDS} s)")


@workers_app.command("stop")
@friendly_errors
def stop(tier: str | None = TIER) -> None:
    """Stop the pools of a tier (or all): in-flight payments finish, queued ones wait. Operators only.

    Example: remit workers stop --tier free
    """
    tiers = _act("stop", tier)
    console.print(f"pools {', '.join(tiers)}: stopped (applied within {SYNC_SECONDS} s; nothing is lost)")


@workers_app.command("restart")
@friendly_errors
def restart(tier: str | None = TIER) -> None:
    """Stop, then start the pools of a tier (or all). Operators only.

    Example: remit workers restart --tier premium
    """
    tiers = _act("restart", tier)
    console.print(f"pools {', '.join(tiers)}: restarted")

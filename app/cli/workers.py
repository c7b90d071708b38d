"""`remit workers` (pool status and control) and `remit queues` (depths, safe deletion)."""

import getpass
import time

import typer
from rich.table import Table

from app.cli.common import console, friendly_errors, run
from app.cli.tenant_admin import tenant_admin
from app.errors import UsageError
from app.messaging.connection import connect, vhost_of
from app.messaging.management import Management
from app.messaging.topology import TIERS, Topology
from app.settings import get_settings
from app.tenancy.queues import delete_when_drained
from app.tenancy.workers import PoolStatus, pool_status, set_desired_state

workers_app = typer.Typer(help="Worker pools per tier: status, start, stop, restart.", no_args_is_help=True)
queues_app = typer.Typer(help="Work queues: depths, and safe deletion of a dedicated queue.", no_args_is_help=True)
SYNC_WAIT_SECONDS = 5.0  # consumer processes apply a desired state within their 2 s pool sync


async def _status(tenant: str | None) -> list[PoolStatus]:
    settings = get_settings()
    async with tenant_admin() as admin:
        management = Management(settings.rabbitmq_management_url)
        return await pool_status(
            admin.uow, management, Topology.from_settings(settings), vhost_of(settings.amqp_url), tenant
        )


def _table(rows: list[PoolStatus]) -> Table:
    table = Table("pool", "tier", "queue", "desired", "processes", "workers", "running", "messages", "unacked")
    for r in rows:
        table.add_row(
            r.pool,
            r.tier,
            r.queue,
            r.desired_state,
            str(r.processes),
            str(r.workers),
            str(r.running),
            str(r.messages),
            str(r.unacknowledged),
        )
    return table


@workers_app.command("status")
@friendly_errors
def status(tenant: str | None = typer.Option(None, "--tenant", help="Only the pools serving this tenant.")) -> None:
    """Show worker pools: configured and running workers across consumer processes, queue depths.

    Example: remit workers status            remit workers status --tenant anz
    """
    console.print(_table(run(_status(tenant))))


def _tiers(tier: str | None) -> list[str]:
    if tier is not None and tier not in TIERS:
        raise UsageError(f"tier {tier!r} is not one of {', '.join(TIERS)}")
    return [tier] if tier else list(TIERS)


async def _set(tiers: list[str], state: str) -> None:
    async with tenant_admin() as admin:
        await set_desired_state(admin.uow, tiers, state, getpass.getuser())


@workers_app.command("start")
@friendly_errors
def start(tier: str | None = typer.Option(None, "--tier", help="One tier (default: all).")) -> None:
    """Start the pools of a tier (or all) in every consumer process. Operators only.

    Example: remit workers start --tier basic
    """
    run(_set(_tiers(tier), "running"))
    console.print(f"pools {', '.join(_tiers(tier))}: running (applied within a few seconds)")


@workers_app.command("stop")
@friendly_errors
def stop(tier: str | None = typer.Option(None, "--tier", help="One tier (default: all).")) -> None:
    """Stop the pools of a tier (or all): in-flight payments finish, queued ones wait. Operators only.

    Example: remit workers stop --tier free
    """
    run(_set(_tiers(tier), "stopped"))
    console.print(f"pools {', '.join(_tiers(tier))}: stopped (applied within a few seconds; nothing is lost)")


@workers_app.command("restart")
@friendly_errors
def restart(tier: str | None = typer.Option(None, "--tier", help="One tier (default: all).")) -> None:
    """Stop, then start the pools of a tier (or all). Operators only.

    Example: remit workers restart --tier premium
    """
    tiers = _tiers(tier)
    run(_set(tiers, "stopped"))
    time.sleep(SYNC_WAIT_SECONDS)
    run(_set(tiers, "running"))
    console.print(f"pools {', '.join(tiers)}: restarted")


@queues_app.command("list")
@friendly_errors
def list_queues() -> None:
    """List remit's queues with their depths and consumers.

    Example: remit queues list
    """
    settings = get_settings()
    management = Management(settings.rabbitmq_management_url)
    table = Table("queue", "messages", "ready", "unacked", "consumers")
    for name, d in sorted(management.queue_depths(vhost_of(settings.amqp_url), None).items()):
        table.add_row(
            name, str(d["messages"]), str(d["messages_ready"]), str(d["messages_unacknowledged"]), str(d["consumers"])
        )
    console.print(table)


async def _delete_when_drained(tenant: str, timeout: float) -> None:
    settings = get_settings()
    name = Topology.from_settings(settings).dedicated_queue(tenant)
    async with tenant_admin() as admin:
        if (await admin.show(tenant)).dedicated_queue:
            raise UsageError(f"{tenant} still uses {name}: run `remit tenants dedicate {tenant} --off` first")
    connection = await connect(settings.amqp_url, "remit-cli-queues")
    try:
        management = Management(settings.rabbitmq_management_url)
        await delete_when_drained(connection, management, vhost_of(settings.amqp_url), name, timeout)
    finally:
        await connection.close()
    console.print(f"{name} drained and deleted")


@queues_app.command("delete")
@friendly_errors
def delete(
    tenant: str = typer.Argument(..., help="The tenant whose dedicated queue to remove."),
    timeout: float = typer.Option(300, help="Seconds to wait for the queue to drain."),
) -> None:
    """Delete a tenant's dedicated queue, safely: only after the tenant was moved back to its tier
    (`remit tenants dedicate T --off`), and only once the queue is seen empty twice, ready and unacked.

    Example: remit tenants dedicate anz --off && remit queues delete anz
    """
    run(_delete_when_drained(tenant, timeout))

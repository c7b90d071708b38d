"""`remit tenants`: add, list, show, move between tiers, dedicate a queue, suspend and resume tenants."""

import typer
from rich.table import Table

from app.cli.common import console, friendly_errors, run, with_uow
from app.cli.tenant_admin import with_admin
from app.tenancy.tenants import AddTenant, list_tenants

tenants_app = typer.Typer(help="Manage tenants.", no_args_is_help=True)


@tenants_app.command("add")
@friendly_errors
def add(
    tenant_id: str = typer.Argument(..., help="Tenant id: lower-case letters, digits, '_' or '-'."),
    name: str = typer.Option(..., "--name", help="Display name."),
    tier: str = typer.Option("basic", "--tier", help="free, basic, premium or enterprise."),
    ttl: int = typer.Option(86_400, "--ttl", min=1, help="Default time-to-live of a payment, seconds."),
) -> None:
    """Add a tenant (idempotent): its record, its routing key's binding, and its RabbitMQ user.

    The RabbitMQ password is printed once, when the tenant is created; remit does not keep it.

    Example: remit tenants add anz --name "ANZ Bank" --tier premium
    """
    created, credentials = run(with_admin(lambda admin: admin.add(AddTenant(tenant_id, name, tier, ttl))))
    console.print(f"tenant {tenant_id} {'added' if created else 'already exists'}; routing key {tenant_id}.payment")
    if credentials:
        console.print(
            f"RabbitMQ publisher: user [bold]{credentials.user}[/] password [bold]{credentials.password}[/] "
            f"(shown once; publish to exchange payments with routing key {tenant_id}.payment and user_id "
            f"{credentials.user})"
        )


@tenants_app.command("list")
@friendly_errors
def list_() -> None:
    """List tenants.

    Example: remit tenants list
    """
    rows = run(with_uow(list_tenants))
    table = Table("tenant", "name", "tier", "status", "dedicated queue", "default ttl (s)")
    for row in rows:
        table.add_row(
            row.tenant_id,
            row.name,
            row.tier,
            row.status,
            "yes" if row.dedicated_queue else "",
            str(row.default_ttl_seconds),
        )
    console.print(table)


@tenants_app.command("show")
@friendly_errors
def show(tenant_id: str = typer.Argument(..., help="Tenant id.")) -> None:
    """Show a tenant with its tier, status and limits.

    Example: remit tenants show anz
    """
    row = run(with_admin(lambda admin: admin.show(tenant_id)))
    table = Table("field", "value", title=f"tenant {tenant_id}")
    for key, value in row._mapping.items():
        table.add_row(key, str(value))
    console.print(table)


@tenants_app.command("set-tier")
@friendly_errors
def set_tier(
    tenant_id: str = typer.Argument(..., help="Tenant id."),
    tier: str = typer.Argument(..., help="free, basic, premium or enterprise."),
) -> None:
    """Move a tenant to another tier: new payments go to that tier's queue; queued ones are still processed.

    Example: remit tenants set-tier anz enterprise
    """
    queue = run(with_admin(lambda admin: admin.set_tier(tenant_id, tier)))
    console.print(f"tenant {tenant_id} is now {tier}; its payments go to {queue}")


@tenants_app.command("dedicate")
@friendly_errors
def dedicate(
    tenant_id: str = typer.Argument(..., help="Tenant id."),
    off: bool = typer.Option(False, "--off", help="Move the tenant back to its tier's shared queue."),
) -> None:
    """Give a tenant a queue of its own (served by an enterprise-sized pool), or take it away.

    Taking it away is safe: new payments go to the tier queue at once, the dedicated queue is drained by
    its pool, and `remit queues delete` removes it only once it is empty.

    Example: remit tenants dedicate anz        remit tenants dedicate anz --off
    """
    queue = run(with_admin(lambda admin: admin.set_dedicated(tenant_id, not off)))
    console.print(f"tenant {tenant_id}'s payments go to {queue}")


@tenants_app.command("suspend")
@friendly_errors
def suspend(tenant_id: str = typer.Argument(..., help="Tenant id.")) -> None:
    """Refuse the tenant's new batches and direct publishes; payments already accepted still complete.

    Example: remit tenants suspend anz
    """
    run(with_admin(lambda admin: admin.suspend(tenant_id)))
    console.print(f"tenant {tenant_id} suspended")


@tenants_app.command("resume")
@friendly_errors
def resume(tenant_id: str = typer.Argument(..., help="Tenant id.")) -> None:
    """Let a suspended tenant submit and publish again.

    Example: remit tenants resume anz
    """
    run(with_admin(lambda admin: admin.resume(tenant_id)))
    console.print(f"tenant {tenant_id} active")


@tenants_app.command("limits")
@friendly_errors
def limits(
    tenant_id: str = typer.Argument(..., help="Tenant id."),
    rate: int | None = typer.Option(None, min=1, help="Payments per second."),
    bytes_per_second: int | None = typer.Option(None, min=1, help="Bytes per second."),
    max_in_flight: int | None = typer.Option(None, min=1, help="Payments accepted but not yet settled."),
    max_message_bytes: int | None = typer.Option(None, min=512, help="Largest message, bytes."),
    ttl: int | None = typer.Option(None, min=1, help="Default time-to-live, seconds."),
) -> None:
    """Set a tenant's limits (only the ones given).

    Example: remit tenants limits anz --rate 500 --max-in-flight 20000
    """
    values = {
        "publish_rate_per_second": rate,
        "publish_bytes_per_second": bytes_per_second,
        "max_in_flight": max_in_flight,
        "max_message_bytes": max_message_bytes,
        "default_ttl_seconds": ttl,
    }
    row = run(with_admin(lambda admin: admin.set_limits(tenant_id, {k: v for k, v in values.items() if v is not None})))
    console.print(
        f"tenant {tenant_id}: {row.publish_rate_per_second}/s, {row.publish_bytes_per_second} B/s, "
        f"{row.max_in_flight} in flight, {row.max_message_bytes} B per message, ttl {row.default_ttl_seconds}s"
    )

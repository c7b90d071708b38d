"""`remit tenants`: add, list, show, delete (two phases), move between tiers, dedicate a queue, suspend and
resume tenants, set their limits, rotate their RabbitMQ credentials. Every change is the tenants service's
(app/tenancy/admin.py), which the admin API calls too."""

from dataclasses import asdict, fields

import typer
from rich.table import Table

from app.bootstrap import Operator
from app.cli.common import console, friendly_errors, run, with_operator, with_uow
from app.cli.listing import FORMAT, Format, keep, number, print_csv, print_json, print_table, records
from app.cli.safe_console import line
from app.storage.ports.tenants import Tenant
from app.tenancy.deletion import Deletion
from app.tenancy.tenants import AddTenant, list_tenants

tenants_app = typer.Typer(help="Manage tenants.", no_args_is_help=True)


@tenants_app.command("add")
@friendly_errors
def add(
    tenant_id: str = typer.Argument(..., help="Tenant id: lower-case letters, digits, '_' or '-'."),
    name: str = typer.Option(..., "--name", help="Display name."),
    tier: str | None = typer.Option(None, "--tier", help="free, basic, premium or enterprise (new tenants: basic)."),
    ttl: int | None = typer.Option(
        None, "--ttl", min=1, help="Default time-to-live of a payment, seconds (default REMIT_DEFAULT_TTL_SECONDS)."
    ),
    update: bool = typer.Option(
        False, "--update", help="Apply a --name, --tier or --ttl that differs on an existing tenant."
    ),
) -> None:
    """Add a tenant (idempotent): its record, its routing key's binding, and its RabbitMQ user.

    Run again, it completes what an earlier run left undone (a RabbitMQ user not made because the management
    API was down). An existing tenant with another --name, --tier or --ttl is an error naming the difference
    (exit 2), unless --update applies it. The RabbitMQ password is printed once, when the user is made; remit
    does not keep it.

    Example: remit tenants add anz --name "ANZ Bank" --tier premium
    """
    command = AddTenant(tenant_id, name, tier, default_ttl_seconds=ttl)
    added = run(with_operator(lambda op: op.tenants.add(command, update=update)))
    what = "added" if added.created else "already exists"
    if added.updated:
        what = f"updated ({'; '.join(added.updated)})"
    console.print(f"tenant {tenant_id} {what}; routing key {tenant_id}.payment", markup=False, highlight=False)
    if added.credentials and not added.created:
        console.print("its RabbitMQ user was missing (an earlier add did not finish): made now")
    if added.credentials:
        credentials = added.credentials
        console.print(
            line(
                "RabbitMQ publisher: user ",
                (credentials.user, "bold"),
                " password ",
                (credentials.password, "bold"),
                f" (shown once; publish to exchange payments with routing key {tenant_id}.payment and user_id "
                f"{credentials.user})",
            )
        )


@tenants_app.command("rotate-credentials")
@friendly_errors
def rotate_credentials(tenant_id: str = typer.Argument(..., help="Tenant id.")) -> None:
    """Give the tenant's RabbitMQ user a new password, printed once: the old one is refused from now on and
    the connections made with it are closed. Also moves a user still named the old way (`tenant-<id>`,
    without the vhost) to this deployment's name.

    Example: remit tenants rotate-credentials anz
    """
    rotation = run(with_operator(lambda op: op.tenants.rotate_credentials(tenant_id)))
    user, password = rotation.credentials.user, rotation.credentials.password
    console.print(f"RabbitMQ publisher: user {user} password {password}", markup=False, highlight=False, soft_wrap=True)
    console.print("shown once: remit does not keep it; the old password no longer logs in")
    if rotation.legacy_user:
        what = "deleted" if rotation.legacy_deleted else "removed from this deployment (other vhosts still use it)"
        console.print(f"old user {rotation.legacy_user} {what}: publish as {user} with user_id {user}")


@tenants_app.command("list")
@friendly_errors
def list_(fmt: Format = FORMAT) -> None:
    """List tenants with their status (active, suspended, draining: being deleted, deleted).

    --format json and csv give every field of each tenant, its limits too.

    Example: remit tenants list            remit tenants list --format csv
    """
    rows = run(with_uow(list_tenants))
    if fmt is Format.JSON:
        print_json(console, records(rows))
        return
    if fmt is Format.CSV:
        print_csv(console, [f.name for f in fields(Tenant)], records(rows))
        return
    table = Table(
        keep("tenant"), keep("name"), keep("tier"), keep("status"), keep("dedicated queue"), number("default ttl (s)")
    )
    for row in rows:
        status = f"deleted {row.deleted_at:%Y-%m-%d}" if row.deleted_at else row.status
        table.add_row(
            row.tenant_id,
            row.name,
            row.tier,
            status,
            "yes" if row.dedicated_queue else "",
            f"{row.default_ttl_seconds:,}",
        )
    print_table(console, table)


@tenants_app.command("show")
@friendly_errors
def show(tenant_id: str = typer.Argument(..., help="Tenant id.")) -> None:
    """Show a tenant with its tier, status and limits; for one being deleted, what it still has in flight.

    Example: remit tenants show anz
    """
    row, deletion = run(with_operator(lambda op: _shown(op, tenant_id)))
    table = Table("field", "value", title=f"tenant {tenant_id}")
    for key, value in asdict(row).items():
        table.add_row(key, str(value))
    if deletion is not None:
        for key, value in _deletion_fields(deletion).items():
            table.add_row(key, value)
    console.print(table)


async def _shown(op: Operator, tenant_id: str) -> tuple[Tenant, Deletion | None]:
    return await op.tenants.show(tenant_id), await op.tenants.deletion(tenant_id)


def _deletion_fields(deletion: Deletion) -> dict[str, str]:
    if deletion.drain is None:
        return {"records kept until": f"{deletion.kept_until:%Y-%m-%d %H:%M} UTC (then `remit purge` erases them)"}
    drain = deletion.drain
    return {
        "in flight": f"{drain.in_flight.payments} payments, {drain.in_flight.bytes} bytes",
        "not yet published": str(drain.unpublished),
        "waiting to be retried": str(drain.retrying),
        "in its dedicated queue": str(deletion.queued),
    }


@tenants_app.command("delete")
@friendly_errors
def delete(
    tenant_id: str = typer.Argument(..., help="Tenant id."),
    confirm: bool = typer.Option(
        False,
        "--confirm",
        help="Phase 2: remove its broker user, binding and dedicated queue once nothing is in flight.",
    ),
) -> None:
    """Delete a tenant in two phases. Without --confirm (phase 1) it drains: new batches and direct publishes
    are refused, what it had accepted is still processed. With --confirm (phase 2), once nothing is in flight,
    its RabbitMQ user, binding and dedicated queue are removed and its API keys revoked; its ledger, processed
    records, dead letters and audit trail are kept for the retention, then `remit purge` erases them. Phase 2
    while payments are in flight is refused with their count (exit 75: ask again later). `remit tenants
    resume` cancels phase 1.

    Example: remit tenants delete anz        remit tenants delete anz --confirm
    """
    deletion = run(with_operator(lambda op: op.tenants.delete(tenant_id, confirm=confirm)))
    if deletion.deleted:
        users = ", ".join(deletion.removed_users) or "none left"
        console.print(
            f"tenant {tenant_id} deleted; RabbitMQ users removed: {users}; API keys revoked: "
            f"{deletion.revoked_keys}; its records are kept until "
            f"{deletion.kept_until:%Y-%m-%d} (then `remit purge` erases them)",
            markup=False,
            highlight=False,
        )
        return
    fields = "; ".join(f"{key} {value}" for key, value in _deletion_fields(deletion).items())
    console.print(f"tenant {tenant_id} is draining: {fields}", markup=False, highlight=False)
    console.print(f"once nothing is in flight: remit tenants delete {tenant_id} --confirm", markup=False)


@tenants_app.command("set-tier")
@friendly_errors
def set_tier(
    tenant_id: str = typer.Argument(..., help="Tenant id."),
    tier: str = typer.Argument(..., help="free, basic, premium or enterprise."),
) -> None:
    """Move a tenant to another tier: new payments go to that tier's queue; queued ones are still processed.

    Example: remit tenants set-tier anz enterprise
    """
    queue = run(with_operator(lambda op: op.tenants.set_tier(tenant_id, tier)))
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
    queue = run(with_operator(lambda op: op.tenants.set_dedicated(tenant_id, not off)))
    console.print(f"tenant {tenant_id}'s payments go to {queue}")


@tenants_app.command("suspend")
@friendly_errors
def suspend(tenant_id: str = typer.Argument(..., help="Tenant id.")) -> None:
    """Refuse the tenant's new batches and direct publishes; payments already accepted still complete.

    Example: remit tenants suspend anz
    """
    run(with_operator(lambda op: op.tenants.suspend(tenant_id)))
    console.print(f"tenant {tenant_id} suspended")


@tenants_app.command("resume")
@friendly_errors
def resume(tenant_id: str = typer.Argument(..., help="Tenant id.")) -> None:
    """Let a suspended tenant submit and publish again.

    Example: remit tenants resume anz
    """
    run(with_operator(lambda op: op.tenants.resume(tenant_id)))
    console.print(f"tenant {tenant_id} active")


@tenants_app.command("limits")
@friendly_errors
def limits(
    tenant_id: str = typer.Argument(..., help="Tenant id."),
    rate: int | None = typer.Option(None, min=1, help="Payments per second."),
    bytes_per_second: int | None = typer.Option(None, min=1, help="Bytes per second."),
    max_in_flight: int | None = typer.Option(None, min=1, help="Payments accepted but not yet settled."),
    max_bytes_in_flight: int | None = typer.Option(
        None, min=1, max=2**63 - 1, help="Bytes of payments accepted but not yet settled (the byte quota)."
    ),
    max_message_bytes: int | None = typer.Option(None, min=512, help="Largest message, bytes."),
    ttl: int | None = typer.Option(None, min=1, help="Default time-to-live, seconds."),
) -> None:
    """Set a tenant's limits (only the ones given).

    A batch that would take the tenant past --max-in-flight payments or --max-bytes-in-flight bytes is refused
    whole (exit 2, HTTP 429) with the numbers.

    Example: remit tenants limits anz --rate 500 --max-in-flight 20000 --max-bytes-in-flight 500000000
    """
    values = {
        "publish_rate_per_second": rate,
        "publish_bytes_per_second": bytes_per_second,
        "max_in_flight": max_in_flight,
        "max_bytes_in_flight": max_bytes_in_flight,
        "max_message_bytes": max_message_bytes,
        "default_ttl_seconds": ttl,
    }
    row = run(
        with_operator(lambda op: op.tenants.set_limits(tenant_id, {k: v for k, v in values.items() if v is not None}))
    )
    console.print(
        f"tenant {tenant_id}: {row.publish_rate_per_second}/s, {row.publish_bytes_per_second} B/s, "
        f"{row.max_in_flight} in flight, {row.max_bytes_in_flight} B in flight, {row.max_message_bytes} B per message, "
        f"ttl {row.default_ttl_seconds}s"
    )

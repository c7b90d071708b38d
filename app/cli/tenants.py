"""`remit tenants`: add and list tenants."""

import typer
from rich.table import Table

from app.cli.common import console, friendly_errors, run, with_uow
from app.tenancy.tenants import AddTenant, add_tenant, list_tenants

tenants_app = typer.Typer(help="Manage tenants.", no_args_is_help=True)


@tenants_app.command("add")
@friendly_errors
def add(
    tenant_id: str = typer.Argument(..., help="Tenant id: lower-case letters, digits, '_' or '-'."),
    name: str = typer.Option(..., "--name", help="Display name."),
    tier: str = typer.Option("basic", "--tier", help="free, basic, premium or enterprise."),
    ttl: int = typer.Option(86_400, "--ttl", min=1, help="Default time-to-live of a payment, seconds."),
) -> None:
    """Add a tenant (idempotent).

    Example: remit tenants add anz --name "ANZ Bank" --tier premium
    """
    created = run(with_uow(lambda uow: add_tenant(AddTenant(tenant_id, name, tier, ttl), uow)))
    console.print(f"tenant {tenant_id} {'added' if created else 'already exists'}")


@tenants_app.command("list")
@friendly_errors
def list_() -> None:
    """List tenants.

    Example: remit tenants list
    """
    rows = run(with_uow(list_tenants))
    table = Table("tenant", "name", "tier", "status", "default ttl (s)")
    for row in rows:
        table.add_row(row.tenant_id, row.name, row.tier, row.status, str(row.default_ttl_seconds))
    console.print(table)

"""`remit apikeys`: API keys for the admin HTTP API and the DLQ console."""

import json
from dataclasses import asdict

import typer
from rich.table import Table

from app.admin.api_keys import create_api_key, list_api_keys, revoke_api_key
from app.cli.common import console, err_console, friendly_errors, run, with_uow
from app.errors import UsageError
from app.tenancy.tenants import check_tenant_id

apikeys_app = typer.Typer(help="API keys for the admin HTTP API and the DLQ console.", no_args_is_help=True)


@apikeys_app.command("create")
@friendly_errors
def create(
    tenant: str | None = typer.Option(None, "--tenant", help="A key for this tenant: it sees and acts only for it."),
    admin: bool = typer.Option(False, "--admin", help="An admin key: it sees every tenant (operators only)."),
    label: str | None = typer.Option(None, "--label", help="Who or what uses the key; shown in the audit trail."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (the key included) instead of text."),
) -> None:
    """Create an API key and print it once: only its hash is stored, so it cannot be shown again.

    Example: remit apikeys create --tenant anz --label "anz ops console"
    """
    if admin == (tenant is not None):
        raise UsageError("give exactly one of --tenant T or --admin")
    new = run(with_uow(lambda uow: create_api_key(uow, check_tenant_id(tenant) if tenant else None, label)))
    if as_json:
        console.print_json(json.dumps(asdict(new)))
        return
    scope = f"tenant {new.tenant_id}" if new.tenant_id else "admin (all tenants)"
    console.print(f"API key {new.key_id} for {scope} created. It is shown only this once; store it safely:")
    console.print(new.key, highlight=False, soft_wrap=True)
    err_console.print("use it as `Authorization: Bearer <key>` or `X-API-Key: <key>`, or log in to /console with it")


@apikeys_app.command("list")
@friendly_errors
def list_(
    tenant: str | None = typer.Option(None, "--tenant", help="Only this tenant's keys."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List API keys (ids, roles, labels; never the secrets).

    Example: remit apikeys list --tenant anz
    """
    keys = run(with_uow(lambda uow: list_api_keys(uow, tenant)))
    if as_json:
        console.print_json(json.dumps({"api_keys": [asdict(k) for k in keys]}, default=str))
        return
    table = Table("key id", "role", "tenant", "label", "created", "revoked")
    for k in keys:
        revoked = f"{k.revoked_at:%Y-%m-%d %H:%M}" if k.revoked_at else ""
        table.add_row(k.key_id, k.role, k.tenant_id or "", k.label or "", f"{k.created_at:%Y-%m-%d %H:%M}", revoked)
    console.print(table)


@apikeys_app.command("revoke")
@friendly_errors
def revoke(key_id: str = typer.Argument(..., help="The key id from `remit apikeys list`.")) -> None:
    """Revoke a key at once: API calls with it get 401 and its console sessions end.

    Example: remit apikeys revoke 3f9a1c0b2d4e
    """
    changed = run(with_uow(lambda uow: revoke_api_key(uow, key_id)))
    console.print(f"API key {key_id} {'revoked' if changed else 'was already revoked'}")

"""`python -m corebank` (also `remit core-bank`): serve, db upgrade, accounts load, openapi."""

import asyncio
import functools
import logging
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import typer
import uvicorn

from corebank.errors import CoreBankError
from corebank.settings import CoreBankSettings

cli = typer.Typer(
    name="corebank",
    help="The reference core-banking service (a separate system with its own database). See docs/core-banking.md.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)
db_app = typer.Typer(help="The core's own database.", no_args_is_help=True)
accounts_app = typer.Typer(help="Accounts.", no_args_is_help=True)
cli.add_typer(db_app, name="db")
cli.add_typer(accounts_app, name="accounts")

P = ParamSpec("P")
T = TypeVar("T")


def _one_line_errors(func: Callable[P, T]) -> Callable[P, T]:
    """The core's own errors become one line on stderr and exit code 2, not a traceback."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return func(*args, **kwargs)
        except CoreBankError as exc:
            typer.echo(f"corebank: {exc}", err=True)
            raise typer.Exit(2) from exc

    return wrapper


@cli.command()
@_one_line_errors
def serve(
    host: str | None = typer.Option(None, help="Interface (default COREBANK_HOST, 127.0.0.1)."),
    port: int | None = typer.Option(None, help="Port (default COREBANK_PORT, 8700)."),
    faults: bool | None = typer.Option(
        None, "--faults/--no-faults", help="Mount /_faults (tests, demo); needs COREBANK_FAULTS_TOKEN."
    ),
) -> None:
    """Serve the HTTP API; refuses to start without a client's token (COREBANK_CLIENT_TOKENS or
    COREBANK_CLIENT_TOKENS_FILE) or unless the database is at this code's schema head.

    Example: COREBANK_CLIENT_TOKENS='{"remit": ["<token>"]}' python -m corebank serve --port 8700
    """
    from corebank.api.app import asgi_app
    from corebank.database import check_at_head

    overrides = {"host": host, "port": port, "faults_enabled": faults}
    settings = CoreBankSettings().model_copy(update={k: v for k, v in overrides.items() if v is not None})
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    app = asgi_app(settings)  # refuses to start without a client's token (and a faults token, with faults)
    asyncio.run(check_at_head(settings.database_url))
    # httptools and uvloop: C where h11 and asyncio's own loop are Python (h11 was under most of a request in
    # the core's profile, docs/benchmarks.md "External core"). The drop-after-commit fault aborts the request
    # cycle's transport, which both of uvicorn's HTTP/1.1 protocols expose (fault_injection.py).
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        http="httptools",
        loop="uvloop",
        log_level="warning",
        access_log=False,
        **tls_options(settings),
    )


def tls_options(settings: CoreBankSettings) -> dict[str, Any]:
    """uvicorn's TLS options: HTTPS with the server's certificate, and with a client CA, mutual TLS (a client
    without a certificate that CA signed is refused in the handshake)."""
    if settings.tls_certfile is None:
        return {}
    options: dict[str, Any] = {"ssl_certfile": str(settings.tls_certfile), "ssl_keyfile": str(settings.tls_keyfile)}
    if settings.tls_client_ca_file is not None:
        options |= {"ssl_ca_certs": str(settings.tls_client_ca_file), "ssl_cert_reqs": ssl.CERT_REQUIRED}
    return options


@db_app.command("upgrade")
@_one_line_errors
def upgrade(
    create: bool = typer.Option(False, "--create", help="Create the database first if it does not exist."),
) -> None:
    """Migrate the core's database (COREBANK_DATABASE_URL) to head.

    Example: python -m corebank db upgrade --create
    """
    from corebank.database import upgrade as run_upgrade

    typer.echo(asyncio.run(run_upgrade(CoreBankSettings().database_url, create)))


@accounts_app.command("load")
@_one_line_errors
def load(
    file: Path = typer.Argument(..., exists=True, dir_okay=False, help="JSON Lines, one account per line."),
) -> None:
    """Open the accounts in FILE (JSON Lines: bsb, account_number, currency, opening_balance_cents, status);
    accounts that already exist are left as they are.

    Example: python -m corebank accounts load examples/corebank_accounts.jsonl
    """
    from corebank.loader import load_accounts

    opened, present = asyncio.run(load_accounts(CoreBankSettings().database_url, file))
    typer.echo(f"opened {opened} accounts, {present} already present")


@cli.command("openapi")
def openapi(check: bool = typer.Option(False, "--check", help="Fail if the committed document is stale.")) -> None:
    """Write docs/core-banking.openapi.json from the app (or check it)."""
    from corebank.openapi import DOC_PATH, render

    text = render()
    if check:
        if not DOC_PATH.exists() or DOC_PATH.read_text() != text:
            typer.echo(f"{DOC_PATH} is stale: run `python -m corebank openapi`", err=True)
            raise typer.Exit(1)
        return
    DOC_PATH.write_text(text)
    typer.echo(f"wrote {DOC_PATH}")


def main(args: list[str] | None = None, prog_name: str = "corebank") -> None:
    cli(args=args, prog_name=prog_name)

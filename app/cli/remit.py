"""The `remit` command line."""

import os
import sys

import typer

from app.cli.admin import admin_command
from app.cli.apikeys import apikeys_app
from app.cli.archiver import archiver_command
from app.cli.db import db_app
from app.cli.demo import demo
from app.cli.dlq import dlq_app
from app.cli.purge import purge_command, tenant_retention_command
from app.cli.queues import queues_app
from app.cli.reconcile import reconcile_command
from app.cli.relay import relay
from app.cli.report import report
from app.cli.status import status
from app.cli.submit import submit
from app.cli.tenants import tenants_app
from app.cli.trace import trace
from app.cli.workers import workers_app

cli = typer.Typer(
    name="remit",
    help="remit: multi-tenant payment message processing.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
cli.add_typer(db_app, name="db")
cli.add_typer(tenants_app, name="tenants")
cli.add_typer(dlq_app, name="dlq")
cli.add_typer(workers_app, name="workers")
cli.add_typer(queues_app, name="queues")
cli.add_typer(apikeys_app, name="apikeys")
cli.command("admin")(admin_command)
cli.command("purge")(purge_command)
cli.command("archiver")(archiver_command)
tenants_app.command("retention")(tenant_retention_command)
cli.command("submit")(submit)
cli.command("relay")(relay)
cli.command("status")(status)
cli.command("report")(report)
cli.command("demo")(demo)
cli.command("reconcile")(reconcile_command)
cli.command("trace")(trace)


@cli.command("consume")
def consume(workers: int = typer.Option(1, "--workers", "-w", min=1, help="Consumer processes.")) -> None:
    """Run the consumer service (same as `faststream run app.main:app`).

    Example: remit consume --workers 2
    """
    args = ["faststream", "run", "app.main:app", "--workers", str(workers)]
    os.execvp(sys.executable, [sys.executable, "-m", *args])  # noqa: S606 - replace this process, no shell


@cli.command(
    "core-bank",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def core_bank(ctx: typer.Context) -> None:
    """The reference core-banking service, a separate system: `remit core-bank ARGS` is `python -m corebank ARGS`.

    Example: remit core-bank serve --port 8700
    """
    from corebank.cli import main  # lazy: remit itself never imports the core

    main(ctx.args, prog_name="remit core-bank")


def run() -> None:
    cli()

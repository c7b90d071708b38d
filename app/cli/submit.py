"""`remit submit FILE --tenant T`: validate a bulk file and accept its valid rows in one transaction."""

import json
from dataclasses import asdict
from pathlib import Path

import typer
from rich.table import Table

from app.cli.common import console, err_console, friendly_errors, run, with_uow
from app.publisher.accept import submit_batch
from app.publisher.commands import BatchAccepted, SubmitBatch
from app.settings import get_settings
from app.tenancy.tenants import check_tenant_id

MAX_REJECTIONS_SHOWN = 50


@friendly_errors
def submit(
    path: Path = typer.Argument(..., help="Bulk file: .csv or .jsonl.", exists=True, dir_okay=False),
    tenant: str = typer.Option(..., "--tenant", "-t", help="Tenant submitting the batch."),
    correlation_id: str | None = typer.Option(None, "--batch-id", help="Batch id (default: generated)."),
    allow_resubmit: bool = typer.Option(False, help="Accept a file whose exact bytes were submitted before."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Validate a bulk payment file and accept its valid rows as one batch.

    Rejected rows are listed with their reasons and the exit code is 1; the valid rows are still accepted.

    Example: remit submit examples/anz_20250501.csv --tenant anz
    """
    command = SubmitBatch(check_tenant_id(tenant), path, correlation_id, allow_resubmit)
    with err_console.status(f"validating and accepting {path.name} ..."):
        result = run(with_uow(lambda uow: submit_batch(command, uow, get_settings())))
    if as_json:
        console.print_json(json.dumps(asdict(result), default=str))
    else:
        _print(result)
    if result.rejections:
        raise typer.Exit(1)


def _print(result: BatchAccepted) -> None:
    console.print(
        f"batch [bold]{result.correlation_id}[/] for tenant {result.tenant_id}: "
        f"{result.accepted} accepted, {len(result.rejections)} rejected"
    )
    totals = Table("currency", "accepted", "amount (cents)")
    for total in result.totals:
        totals.add_row(total.currency, str(total.count), str(total.amount_cents))
    console.print(totals)
    if result.rejections:
        rejected = Table("line", "payment_reference", "why", title="rejected rows", style="red")
        for r in result.rejections[:MAX_REJECTIONS_SHOWN]:
            rejected.add_row(str(r.row_number), r.payment_reference or "", "; ".join(r.errors))
        err_console.print(rejected)
        if len(result.rejections) > MAX_REJECTIONS_SHOWN:
            err_console.print(f"... and {len(result.rejections) - MAX_REJECTIONS_SHOWN} more (use --json)")

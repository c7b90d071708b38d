"""`remit submit FILE --tenant T`: read a bank file of any format remit reads and accept its valid rows as one
batch, in one transaction."""

import json
from dataclasses import asdict
from pathlib import Path

import typer
from rich.table import Table

from app.bankfiles.formats import FORMAT_NAMES, parse_format
from app.cli.common import console, err_console, friendly_errors, run, with_uow
from app.cli.ingest_progress import ingest_progress
from app.cli.listing import free, keep, number, print_table
from app.cli.safe_console import line
from app.publisher.accept import submit_batch
from app.publisher.commands import BatchAccepted, SubmitBatch
from app.settings import get_settings
from app.tenancy.tenants import tenant_or_default
from contracts.amounts import amount_cell

MAX_REJECTIONS_SHOWN = 50


@friendly_errors
def submit(
    path: Path = typer.Argument(
        ..., help="Bank file: CSV, JSON Lines, ISO 20022 pain.001 or ABA.", exists=True, dir_okay=False
    ),
    tenant: str | None = typer.Option(
        None, "--tenant", "-t", help="Tenant submitting the batch (default: REMIT_DEFAULT_TENANT)."
    ),
    bank_format: str | None = typer.Option(
        None, "--format", "-f", help=f"Read the file as this format ({FORMAT_NAMES}); default: told by its content."
    ),
    correlation_id: str | None = typer.Option(None, "--batch-id", help="Batch id (default: generated)."),
    allow_resubmit: bool = typer.Option(False, help="Accept a file that was submitted before (same identity)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Validate a bank file and accept its valid rows as one batch. The format is told by the file's content
    (not its name): remit's CSV and JSON Lines, ISO 20022 pain.001.001.09 / .03, ABA direct entry.

    Rejected rows are listed with their reasons and the exit code is 1; the valid rows are still accepted.
    A file that is refused whole (truncated, wrong trailer or control total, over a tenant limit, sent
    before) leaves nothing behind: exit code 2.

    Example: remit submit examples/acme_20250501.pain.001.001.09.xml --tenant acme
    """
    named = parse_format(bank_format).value if bank_format else None
    tenant_id = tenant_or_default(tenant, get_settings().default_tenant)
    command = SubmitBatch(tenant_id, path, correlation_id, allow_resubmit, named)
    with ingest_progress(path.name) as progress:
        result = run(with_uow(lambda uow: submit_batch(command, uow, get_settings(), progress=progress)))
    if as_json:
        console.print_json(json.dumps(asdict(result), default=str))
    else:
        _print(result)
    if result.rejected_count:
        raise typer.Exit(1)


def _print(result: BatchAccepted) -> None:
    console.print(
        line(
            "batch ",
            (result.correlation_id, "bold"),
            f" for tenant {result.tenant_id} ({result.source_format}): "
            f"{result.accepted} accepted, {result.rejected_count} rejected",
        )
    )
    totals = Table(keep("currency"), number("accepted"), number("amount (minor units)"))
    for total in result.totals:
        totals.add_row(total.currency, f"{total.count:,}", amount_cell(total.amount_cents, total.currency))
    print_table(console, totals)
    if result.rejections:
        rejected = Table(number("line"), keep("payment_reference"), free("why"), title="rejected rows", style="red")
        for r in result.rejections[:MAX_REJECTIONS_SHOWN]:
            rejected.add_row(str(r.row_number), r.payment_reference or "", "; ".join(r.errors))
        print_table(err_console, rejected)
        if result.rejected_count > MAX_REJECTIONS_SHOWN:
            err_console.print(
                f"... and {result.rejected_count - MAX_REJECTIONS_SHOWN} more: "
                f"remit report {result.correlation_id} --format csv lists every row"
            )

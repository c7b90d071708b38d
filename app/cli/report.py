"""`remit report BATCH`: a batch's status report, per original transaction (ISO 20022 pain.002, CSV or JSON)."""

import sys
from datetime import UTC, datetime
from pathlib import Path

import typer

from app.cli.common import err_console, friendly_errors, run, with_uow
from app.cli.safe_console import safe_stdout
from app.known_filters import check_known
from app.reporting.status_report import CHOICES, BatchReport, report_choice, write_batch_report
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.tenants import check_tenant_id


@friendly_errors
def report(
    batch: str = typer.Argument(..., help="Batch id (remit submit prints it)."),
    report_format: str = typer.Option(
        "pain.002", "--format", "-f", help=f"One of {CHOICES}; pain.002 matches the original pain.001's version."
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Write to this file (default: standard output)."),
    tenant: str | None = typer.Option(None, "--tenant", "-t", help="Only if the batch is this tenant's."),
) -> None:
    """Per original transaction: ACSC (booked), RJCT with an ISO reason code, or PDNG (in flight or held for
    review), with the original message, payment-information and transaction references.

    Example: remit report bulk_acme_20250501_3f2a9c1d0b7e --format pain.002 --out acme.pain.002.xml
    """
    choice = report_choice(report_format)
    scope = check_tenant_id(tenant) if tenant else None

    async def write(uow: UnitOfWorkFactory) -> BatchReport:
        await check_known(uow, scope, [batch], dash="--", files_only=True)  # a report needs the batch's file
        if out is None:  # on a terminal, what the tenant wrote is shown escaped (app/cli/safe_console.py)
            sink = safe_stdout(sys.stdout.buffer, sys.stdout.isatty())
            try:
                return await write_batch_report(uow, scope, batch, choice, sink, datetime.now(UTC))
            finally:
                sink.flush()
        with out.open("wb") as sink:
            return await write_batch_report(uow, scope, batch, choice, sink, datetime.now(UTC))

    try:
        written = run(with_uow(write))
    except BaseException:
        if out is not None:
            out.unlink(missing_ok=True)  # never leave half a report behind
        raise
    if out is not None:
        counts = ", ".join(f"{status} {n}" for status, n in written.header.status_counts().items())
        err_console.print(f"{out}: {written.form.value}, group status {written.header.group_status} ({counts})")

"""`remit purge`: delete records past their retention, in small batches, safely while the service runs."""

from dataclasses import asdict

import typer
from rich.table import Table

from app.bootstrap import retention_policy
from app.cli.common import console, friendly_errors, run, with_uow
from app.cli.dlq_views import to_json
from app.deadletters.retention import PurgeReport, purge_expired_records, set_tenant_retention
from app.settings import get_settings


@friendly_errors
def purge_command(
    days: int | None = typer.Option(
        None, "--days", min=1, help="Retention in days for tenants without their own (default REMIT_RETENTION_DAYS)."
    ),
    batch_size: int | None = typer.Option(
        None, "--batch-size", min=1, help="Rows per short transaction (default REMIT_PURGE_BATCH_SIZE)."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Count what would be deleted; delete nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Delete processed_messages, delivery attempts, closed (replayed, resolved, discarded, already_processed)
    dead letters and transfer key generations older than the retention. Open dead letters and the audit trail are
    kept. A tenant deleted (`remit tenants delete --confirm`) longer ago than its retention is erased whole: every
    row of every table. The retention must be at least TTL + the longest retry delay + the replay window; a shorter
    one is refused.

    Example: remit purge --dry-run
             remit purge --days 45
    """
    policy = retention_policy(get_settings(), days, batch_size)
    report = run(with_uow(lambda uow: purge_expired_records(uow, policy, dry_run=dry_run)))
    if as_json:
        console.print_json(to_json(asdict(report)))
    else:
        own = ", ".join(f"{t} {d} days" for t, d in sorted(report.tenant_days.items())) or "none"
        console.print(f"retention: {report.days} days; tenants with their own: {own}")
        console.print(_report_table(report))
        if report.erased:
            erased = ", ".join(f"{table} {n}" for table, n in report.erased.items())
            console.print(f"rows of deleted tenants erased: {erased}", markup=False, highlight=False)


def _report_table(report: PurgeReport) -> Table:
    table = Table("records", "would delete" if report.dry_run else "deleted")
    for name, count in report.deleted.items():
        table.add_row(name, str(count))
    return table


@friendly_errors
def tenant_retention_command(
    tenant_id: str = typer.Argument(..., help="The tenant."),
    days: int | None = typer.Argument(None, min=1, help="Days to keep; leave out to go back to the default."),
) -> None:
    """Give a tenant its own retention (refused when shorter than its TTL + retry delay + replay window).

    Example: remit tenants retention anz 90
    """
    run(with_uow(lambda uow: set_tenant_retention(uow, tenant_id, days, retention_policy(get_settings()))))
    console.print(f"tenant {tenant_id}: retention {f'{days} days' if days else 'back to the default'}")

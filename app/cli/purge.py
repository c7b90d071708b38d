"""`remit purge`: delete records past their retention, in small batches, safely while the service runs."""

from dataclasses import asdict

import typer
from rich.table import Table

from app.cli.common import console, friendly_errors, run, with_uow
from app.cli.dlq_views import to_json
from app.deadletters.retention import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_REPLAY_WINDOW_DAYS,
    DEFAULT_RETENTION_DAYS,
    PurgeReport,
    RetentionPolicy,
    purge_expired_records,
    set_tenant_retention,
)
from app.settings import get_settings


def _policy(days: int | None, batch_size: int = DEFAULT_BATCH_SIZE) -> RetentionPolicy:
    settings = get_settings()
    # getattr: these settings fields are wired by the lead (REMIT_RETENTION_DAYS, REMIT_REPLAY_WINDOW_DAYS).
    default_days = getattr(settings, "retention_days", DEFAULT_RETENTION_DAYS)
    window = getattr(settings, "replay_window_days", DEFAULT_REPLAY_WINDOW_DAYS)
    return RetentionPolicy(
        days=days if days is not None else int(default_days),
        replay_window_days=int(window),
        retry_delays_seconds=tuple(settings.retry_delays_seconds),
        default_ttl_seconds=settings.default_ttl_seconds,
        batch_size=batch_size,
    )


@friendly_errors
def purge_command(
    days: int | None = typer.Option(
        None, "--days", min=1, help="Retention in days for tenants without their own (default 30)."
    ),
    batch_size: int = typer.Option(DEFAULT_BATCH_SIZE, "--batch-size", min=1, help="Rows per short transaction."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Count what would be deleted; delete nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Delete processed_messages, delivery attempts and closed (replayed, resolved, discarded) dead letters
    older than the retention. Open dead letters and the audit trail are kept. The retention must be at
    least TTL + the longest retry delay + the replay window; a shorter one is refused.

    Example: remit purge --dry-run
             remit purge --days 45
    """
    policy = _policy(days, batch_size)
    report = run(with_uow(lambda uow: purge_expired_records(uow, policy, dry_run=dry_run)))
    if as_json:
        console.print_json(to_json(asdict(report)))
    else:
        own = ", ".join(f"{t} {d} days" for t, d in sorted(report.tenant_days.items())) or "none"
        console.print(f"retention: {report.days} days; tenants with their own: {own}")
        console.print(_report_table(report))


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
    run(with_uow(lambda uow: set_tenant_retention(uow, tenant_id, days, _policy(None))))
    console.print(f"tenant {tenant_id}: retention {f'{days} days' if days else 'back to the default'}")

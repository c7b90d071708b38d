"""`remit dlq`: review, replay and discard dead letters. `--tenant` limits every command to one tenant."""

from collections.abc import Callable
from typing import Any

import typer
from rich.console import Group

from app.bootstrap import Ports, replay_core, replay_policy, replay_publisher
from app.cli import listing
from app.cli.common import console, friendly_errors, run, with_uow
from app.cli.dlq_views import (
    LIST_FIELDS,
    STAT_FIELDS,
    audit_csv,
    audit_table,
    detail_view,
    list_table,
    replay_table,
    requests_table,
    stat_records,
    stats_view,
)
from app.cli.listing import FORMAT, JSON, Format, chosen, print_csv, print_json, records
from app.cli.progress import progress
from app.deadletters import operations
from app.deadletters.operations import Filters, ReplayReport
from app.deadletters.replay import ReplayOutcome
from app.deadletters.requests import ReplayRequest
from app.errors import UsageError
from app.messaging.connection import login_of
from app.settings import get_settings
from app.storage.unit_of_work import UnitOfWorkFactory

dlq_app = typer.Typer(
    help="Review, replay and discard dead letters (payments that could not be processed).", no_args_is_help=True
)

TENANT = typer.Option(None, "--tenant", help="Only this tenant's dead letters (default: all tenants, admin).")
REASON = typer.Option(None, "--reason", help="invalid, account_closed, insufficient_funds, retries_exhausted, ...")
BATCH = typer.Option(None, "--batch", help="Batch (correlation_id).")
CURRENCY = typer.Option(None, "--currency", help="ISO 4217 code, e.g. AUD.")
SINCE = typer.Option(None, "--since", help="Failed at or after: ISO time, or an age such as 30m, 2h, 7d.")
UNTIL = typer.Option(None, "--until", help="Failed before: ISO time, or an age such as 30m, 2h, 7d.")
JSON_ONLY = typer.Option(False, "--json", help="Print JSON instead of tables.")
ACTOR = typer.Option(None, "--actor", help="Who is doing this, for the audit trail (default: $USER).")


CsvTable = tuple[list[str], list[dict[str, Any]]]


def _print(fmt: Format, value: Any, view: Callable[[], Any], csv: Callable[[], CsvTable] | None = None) -> None:
    if fmt is Format.JSON:
        print_json(console, value)
    elif fmt is Format.CSV and csv is not None:
        print_csv(console, *csv())
    else:
        listing.print_table(console, view())


STATUS_HELP = "open, replayed, resolved, discarded, already_processed or all."


@dlq_app.command("list")
@friendly_errors
def list_(
    tenant: str | None = TENANT,
    reason: str | None = REASON,
    batch: str | None = BATCH,
    currency: str | None = CURRENCY,
    status: str = typer.Option("open", "--status", help=STATUS_HELP),
    since: str | None = SINCE,
    until: str | None = UNTIL,
    limit: int = typer.Option(50, "--limit", min=1, help="Most rows shown (newest first)."),
    fmt: Format = FORMAT,
    as_json: bool = JSON,
) -> None:
    """List dead letters, newest first (open ones unless --status says otherwise).

    Example: remit dlq list --tenant anz --reason retries_exhausted --since 24h
             remit dlq list --status all --format csv > dead-letters.csv
    """
    fmt = chosen(fmt, as_json)
    where = Filters(reason, batch, currency, status, since, until).parsed(tenant, "--")
    rows = run(with_uow(lambda uow: operations.find(uow, where, limit, "--")))
    _print(fmt, {"dead_letters": rows}, lambda: list_table(rows), lambda: (LIST_FIELDS, records(rows)))


@dlq_app.command("show")
@friendly_errors
def show(
    dead_letter_id: int = typer.Argument(..., help="The id from `remit dlq list`."),
    tenant: str | None = TENANT,
    unmask: bool = typer.Option(False, "--unmask", help="Show account numbers in full (PII)."),
    as_json: bool = JSON_ONLY,
) -> None:
    """Show one dead letter in full: body, headers, error, attempt history and audit trail.

    Example: remit dlq show 42 --tenant anz
    """
    detail = run(with_uow(lambda uow: operations.show(uow, dead_letter_id, tenant, unmask)))
    _print(chosen(Format.TABLE, as_json), detail, lambda: detail_view(detail))


@dlq_app.command("stats")
@friendly_errors
def stats(
    tenant: str | None = TENANT,
    status: str = typer.Option("open", "--status", help=STATUS_HELP),
    fmt: Format = FORMAT,
    as_json: bool = JSON,
) -> None:
    """Counts and value at risk (sum of amount_cents, per currency) by reason, tenant and age.

    Example: remit dlq stats --tenant anz
    """
    fmt = chosen(fmt, as_json)
    where = Filters(status=status).parsed(tenant, "--")
    result = run(with_uow(lambda uow: operations.stats(uow, where, "--")))
    _print(fmt, result, lambda: stats_view(result), lambda: (STAT_FIELDS, stat_records(result)))


@dlq_app.command("replay")
@friendly_errors
def replay(
    dead_letter_id: int | None = typer.Argument(None, help="One dead letter; or select several with filters."),
    tenant: str | None = TENANT,
    reason: str | None = REASON,
    batch: str | None = BATCH,
    currency: str | None = CURRENCY,
    since: str | None = SINCE,
    until: str | None = UNTIL,
    everything: bool = typer.Option(False, "--all", help="Every open dead letter (within --tenant)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what would happen; change and publish nothing."),
    force: bool = typer.Option(False, "--force", help="Also replay permanent failures (after fixing the cause)."),
    why: str | None = typer.Option(None, "--why", help="A note for the audit trail."),
    actor: str | None = ACTOR,
    as_json: bool = JSON_ONLY,
) -> None:
    """Republish dead letters to the payments exchange with the same message_id (idempotency protects
    against a double payment). Already processed ones are marked resolved instead; permanent failures
    need --force; expired, malformed, too old or over-budget ones are refused with the reason.

    Example: remit dlq replay 42 --dry-run
             remit dlq replay --tenant anz --reason retries_exhausted
    """
    request = ReplayRequest(
        actor=actor or get_settings().actor,
        dead_letter_ids=() if dead_letter_id is None else (dead_letter_id,),
        where=Filters(reason, batch, currency, "all", since, until).parsed(tenant, "--"),
        everything=everything,
        dry_run=dry_run,
        force=force,
        why=why,
    )
    report = run(_replay(request, show_progress=dead_letter_id is None and not as_json))
    outcomes = report.outcomes
    if dead_letter_id is not None and outcomes and outcomes[0].action == "refused":
        raise UsageError(f"dead letter {dead_letter_id} was not replayed: {outcomes[0].detail}")
    _print(chosen(Format.TABLE, as_json), report, lambda: replay_table(outcomes, dry_run))
    if any(o.action == "refused" for o in outcomes):
        raise typer.Exit(1)


async def _replay(request: ReplayRequest, show_progress: bool) -> ReplayReport:
    settings = get_settings()
    with progress(enabled=show_progress) as tracker:
        task = tracker.task("replaying (dry run)" if request.dry_run else "replaying")

        def advance(_: ReplayOutcome, total: int) -> None:
            task.advance(total=total)

        async def action(uow: UnitOfWorkFactory) -> ReplayReport:
            async with (
                replay_publisher(settings, Ports(), request.dry_run) as publisher,
                replay_core(settings) as core,
            ):
                return await operations.replay(
                    uow,
                    request,
                    publisher,
                    user_id=login_of(settings.amqp_url),
                    policy=replay_policy(settings, core),
                    on_outcome=advance,
                    dash="--",
                )

        report = await with_uow(action)
        task.finish()
        return report


@dlq_app.command("discard")
@friendly_errors
def discard(
    dead_letter_id: int = typer.Argument(..., help="The id from `remit dlq list`."),
    why: str = typer.Option(..., "--reason", help="Why no further action is needed (kept in the audit trail)."),
    tenant: str | None = TENANT,
    actor: str | None = ACTOR,
    as_json: bool = JSON_ONLY,
) -> None:
    """Mark an open dead letter discarded (it is never deleted) and record who and why.

    Example: remit dlq discard 42 --reason "duplicate of PAY-ANZ-0042, paid by phone"
    """
    who = actor or get_settings().actor
    done = run(with_uow(lambda uow: operations.discard(uow, dead_letter_id, why, who, tenant)))
    result = {"dead_letter_id": done.dead_letter_id, "status": done.status, "actor": done.actor, "reason": done.reason}
    _print(chosen(Format.TABLE, as_json), result, lambda: f"dead letter {dead_letter_id} discarded by {who}")


@dlq_app.command("audit")
@friendly_errors
def audit(
    tenant: str | None = TENANT,
    dead_letter_id: int | None = typer.Option(None, "--id", help="Only this dead letter's entries."),
    limit: int = typer.Option(100, "--limit", min=1, help="Most entries shown (newest first)."),
    fmt: Format = FORMAT,
    as_json: bool = JSON,
) -> None:
    """Show the audit trail: replay requests (who asked, filters, --force, --dry-run, outcome) and what
    happened to each dead letter (replayed, resolved, refused and why, discarded; dry runs marked).

    Notes and outcomes are shown with account numbers masked, as `remit trace` shows them. --format csv gives
    one table: `record` is `request` or `entry`.

    Example: remit dlq audit --tenant anz --limit 20
    """
    fmt = chosen(fmt, as_json)
    trail = run(with_uow(lambda uow: operations.audit(uow, tenant, dead_letter_id, limit, "--")))
    requests, entries = trail.requests, trail.entries
    _print(
        fmt,
        {"requests": requests, "audit": entries},
        lambda: Group(*([requests_table(requests)] if requests else []), audit_table(entries)),
        lambda: audit_csv(requests, entries),
    )

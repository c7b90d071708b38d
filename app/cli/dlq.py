"""`remit dlq`: review, replay and discard dead letters. `--tenant` limits every command to one tenant."""

import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import aio_pika
import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from app.cli.common import console, friendly_errors, run, with_uow
from app.cli.dlq_views import audit_table, detail_view, list_table, replay_table, stats_view, to_json
from app.deadletters.audit import default_actor, list_audit
from app.deadletters.discard import discard_dead_letter
from app.deadletters.query import DeadLetterFilter
from app.deadletters.reasons import STATUSES
from app.deadletters.replay import (
    DEFAULT_REPLAY_BUDGET,
    ReplayOutcome,
    ReplayPolicy,
    ReplayRequest,
    replay_dead_letters,
)
from app.deadletters.republish import AmqpReplayPublisher, ReplayPublisher
from app.deadletters.retention import DEFAULT_RETENTION_DAYS
from app.deadletters.review import dead_letter_stats, list_dead_letters, show_dead_letter
from app.errors import UsageError
from app.messaging.connection import connect, login_of, publisher_channel
from app.messaging.topology import Topology, declare_topology
from app.settings import get_settings
from app.storage.unit_of_work import UnitOfWorkFactory

dlq_app = typer.Typer(
    help="Review, replay and discard dead letters (payments that could not be processed).", no_args_is_help=True
)

TENANT = typer.Option(None, "--tenant", help="Only this tenant's dead letters (default: all tenants, admin).")
JSON = typer.Option(False, "--json", help="Print JSON instead of tables.")
REASON = typer.Option(None, "--reason", help="invalid, tenant_mismatch, permanent_failure, retries_exhausted, ...")
BATCH = typer.Option(None, "--batch", help="Batch (correlation_id).")
CURRENCY = typer.Option(None, "--currency", help="ISO 4217 code, e.g. AUD.")
SINCE = typer.Option(None, "--since", help="Failed at or after: ISO time, or an age such as 30m, 2h, 7d.")
UNTIL = typer.Option(None, "--until", help="Failed before: ISO time, or an age such as 30m, 2h, 7d.")
ACTOR = typer.Option(None, "--actor", help="Who is doing this, for the audit trail (default: $USER).")

_AGE = re.compile(r"^(\d+)([mhd])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days"}


def parse_when(value: str | None, option: str) -> datetime | None:
    """An ISO 8601 time (UTC if it has no offset) or an age like 30m / 2h / 7d meaning that long ago."""
    if value is None:
        return None
    if match := _AGE.match(value.strip()):
        return datetime.now(UTC) - timedelta(**{_UNITS[match[2]]: int(match[1])})
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"{option} {value!r} is not a time: use ISO 8601 (2025-05-01T09:00Z) or 30m, 2h, 7d") from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


def _status(value: str) -> str | None:
    if value == "all":
        return None
    if value not in STATUSES:
        raise UsageError(f"--status {value!r} is not one of {', '.join(STATUSES)} or all")
    return value


def _setting(name: str, default: int) -> int:
    # Read this way until the lead adds the field to Settings (REMIT_REPLAY_BUDGET etc.).
    value = getattr(get_settings(), name, default)
    return value if isinstance(value, int) else default


def _print(as_json: bool, value: Any, view: Callable[[], Any]) -> None:
    if as_json:
        console.print_json(to_json(value))
    else:
        console.print(view())


@dlq_app.command("list")
@friendly_errors
def list_(
    tenant: str | None = TENANT,
    reason: str | None = REASON,
    batch: str | None = BATCH,
    currency: str | None = CURRENCY,
    status: str = typer.Option("open", "--status", help="open, replayed, resolved, discarded or all."),
    since: str | None = SINCE,
    until: str | None = UNTIL,
    limit: int = typer.Option(50, "--limit", min=1, help="Most rows shown (newest first)."),
    as_json: bool = JSON,
) -> None:
    """List dead letters, newest first (open ones unless --status says otherwise).

    Example: remit dlq list --tenant anz --reason retries_exhausted --since 24h
    """
    where = DeadLetterFilter(
        tenant, reason, batch, currency, _status(status), parse_when(since, "--since"), parse_when(until, "--until")
    )
    rows = run(with_uow(lambda uow: list_dead_letters(uow, where, limit)))
    _print(as_json, {"dead_letters": rows}, lambda: list_table(rows))


@dlq_app.command("show")
@friendly_errors
def show(
    dead_letter_id: int = typer.Argument(..., help="The id from `remit dlq list`."),
    tenant: str | None = TENANT,
    unmask: bool = typer.Option(False, "--unmask", help="Show account numbers in full (PII)."),
    as_json: bool = JSON,
) -> None:
    """Show one dead letter in full: body, headers, error, attempt history and audit trail.

    Example: remit dlq show 42 --tenant anz
    """
    detail = run(with_uow(lambda uow: show_dead_letter(uow, dead_letter_id, tenant, unmask)))
    _print(as_json, detail, lambda: detail_view(detail))


@dlq_app.command("stats")
@friendly_errors
def stats(
    tenant: str | None = TENANT,
    status: str = typer.Option("open", "--status", help="open, replayed, resolved, discarded or all."),
    as_json: bool = JSON,
) -> None:
    """Counts and value at risk (sum of amount_cents, per currency) by reason, tenant and age.

    Example: remit dlq stats --tenant anz
    """
    where = DeadLetterFilter(tenant=tenant, status=_status(status))
    result = run(with_uow(lambda uow: dead_letter_stats(uow, where)))
    _print(as_json, result, lambda: stats_view(result))


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
    as_json: bool = JSON,
) -> None:
    """Republish dead letters to the payments exchange with the same message_id (idempotency protects
    against a double payment). Already processed ones are marked resolved instead; permanent failures
    need --force; expired, malformed, too old or over-budget ones are refused with the reason.

    Example: remit dlq replay 42 --dry-run
             remit dlq replay --tenant anz --reason retries_exhausted
    """
    request = ReplayRequest(
        actor=actor or default_actor(),
        dead_letter_id=dead_letter_id,
        where=DeadLetterFilter(
            tenant, reason, batch, currency, None, parse_when(since, "--since"), parse_when(until, "--until")
        ),
        everything=everything,
        dry_run=dry_run,
        force=force,
        why=why,
    )
    outcomes = run(_replay(request, show_progress=dead_letter_id is None and not as_json))
    if dead_letter_id is not None and outcomes and outcomes[0].action == "refused":
        raise UsageError(f"dead letter {dead_letter_id} was not replayed: {outcomes[0].detail}")
    summary = {action: sum(o.action == action for o in outcomes) for action in sorted({o.action for o in outcomes})}
    _print(
        as_json, {"dry_run": dry_run, "summary": summary, "outcomes": outcomes}, lambda: replay_table(outcomes, dry_run)
    )
    if any(o.action == "refused" for o in outcomes):
        raise typer.Exit(1)


async def _replay(request: ReplayRequest, show_progress: bool) -> list[ReplayOutcome]:
    settings = get_settings()
    policy = ReplayPolicy(
        budget=_setting("replay_budget", DEFAULT_REPLAY_BUDGET),
        retention_days=_setting("retention_days", DEFAULT_RETENTION_DAYS),
    )
    columns = (TextColumn("replaying"), BarColumn(), MofNCompleteColumn())
    shown = show_progress and console.is_terminal
    with Progress(*columns, console=console, transient=True, disable=not shown) as progress:
        task = progress.add_task("replay", total=None)

        def advance(_: ReplayOutcome, total: int) -> None:
            progress.update(task, total=total, advance=1)

        async def action(uow: UnitOfWorkFactory) -> list[ReplayOutcome]:
            async with _publisher(request.dry_run) as publisher:
                return await replay_dead_letters(
                    uow,
                    publisher,
                    request,
                    user_id=login_of(settings.amqp_url),
                    policy=policy,
                    on_outcome=advance,
                )

        return await with_uow(action)


class _DryRunPublisher:
    async def publish(self, message: aio_pika.Message, routing_key: str) -> None:
        raise AssertionError("a dry run never publishes")


@asynccontextmanager
async def _publisher(dry_run: bool) -> AsyncIterator[ReplayPublisher]:
    """A confirming publisher on the payments exchange; a dry run does not even connect."""
    if dry_run:
        yield _DryRunPublisher()
        return
    settings = get_settings()
    connection = await connect(settings.amqp_url, "remit-dlq-replay")
    try:
        channel = await publisher_channel(connection)
        await declare_topology(channel, Topology.from_settings(settings))
        yield AmqpReplayPublisher(channel, settings.exchange)
    finally:
        await connection.close()


@dlq_app.command("discard")
@friendly_errors
def discard(
    dead_letter_id: int = typer.Argument(..., help="The id from `remit dlq list`."),
    why: str = typer.Option(..., "--reason", help="Why no further action is needed (kept in the audit trail)."),
    tenant: str | None = TENANT,
    actor: str | None = ACTOR,
    as_json: bool = JSON,
) -> None:
    """Mark an open dead letter discarded (it is never deleted) and record who and why.

    Example: remit dlq discard 42 --reason "duplicate of PAY-ANZ-0042, paid by phone"
    """
    who = actor or default_actor()
    run(with_uow(lambda uow: discard_dead_letter(uow, dead_letter_id, why, who, tenant)))
    result = {"dead_letter_id": dead_letter_id, "status": "discarded", "actor": who, "reason": why}
    _print(as_json, result, lambda: f"dead letter {dead_letter_id} discarded by {who}")


@dlq_app.command("audit")
@friendly_errors
def audit(
    tenant: str | None = TENANT,
    dead_letter_id: int | None = typer.Option(None, "--id", help="Only this dead letter's entries."),
    limit: int = typer.Option(100, "--limit", min=1, help="Most entries shown (newest first)."),
    as_json: bool = JSON,
) -> None:
    """Show the audit trail of replays, resolutions and discards (dry runs included, marked).

    Example: remit dlq audit --tenant anz --limit 20
    """
    entries = run(with_uow(lambda uow: list_audit(uow, tenant, dead_letter_id, limit)))
    _print(as_json, {"audit": entries}, lambda: audit_table(entries))

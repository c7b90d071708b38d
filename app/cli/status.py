"""`remit status`: the per-batch, per-currency summary table; optionally wait until batches settle."""

import asyncio
import time
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import typer
from rich.table import Table

from app.cli.common import console, err_console, friendly_errors, run, with_uow
from app.cli.listing import FORMAT, Format, keep, number, print_csv, print_json, print_table
from app.cli.safe_console import line
from app.known_filters import check_known
from app.observability.core_breaker import BreakerNotice, breaker_notice
from app.observability.relay_health import RelayState, relay_state
from app.reporting.batch_summary import SummaryRow, batch_summary, recent_batches
from app.settings import get_settings
from app.storage.unit_of_work import UnitOfWorkFactory
from contracts.amounts import amount_cell

EXIT_STILL_IN_FLIGHT = 3
SUMMARY_FIELDS = [*(f.name for f in fields(SummaryRow)), "in_flight"]


@dataclass(frozen=True, slots=True)
class StatusView:
    rows: list[SummaryRow]
    relay: RelayState
    breaker: BreakerNotice | None = None  # a consumer's core-banking circuit breaker is open


async def wait_until_settled(
    uow: UnitOfWorkFactory, batches: list[str], timeout: float, poll: float = 0.5
) -> list[SummaryRow]:
    deadline = time.monotonic() + timeout
    while True:
        rows = await batch_summary(uow, batches)
        if all(r.in_flight == 0 for r in rows) or time.monotonic() > deadline:
            return rows
        await asyncio.sleep(poll)


def summary_table(rows: list[SummaryRow]) -> Table:
    table = Table(
        keep("tenant"),
        keep("batch"),
        keep("cur"),
        number("accepted"),
        number("amount (minor units)"),
        number("rejected"),
        number("processed"),
        number("amount (minor units)"),
        number("dead-lettered"),
        number("in flight"),
        number("over amqp"),
        title="batches by currency (amounts in the currency's unit, ISO 4217, the minor units as stored beside them)",
    )
    for r in rows:
        table.add_row(
            r.tenant_id,
            r.correlation_id,
            r.currency,
            f"{r.accepted:,}",
            amount_cell(r.accepted_cents, r.currency),
            f"{r.rejected:,}",
            f"{r.processed:,}",
            amount_cell(r.processed_cents, r.currency),
            f"{r.dead_lettered:,}",
            f"{r.in_flight:,}",
            f"{r.amqp:,}",
        )
    return table


def summary_records(rows: list[SummaryRow]) -> list[dict[str, Any]]:
    """A row per batch and currency, for json and csv: counts, and amounts in integer minor units."""
    return [{**_whole(asdict(r)), "in_flight": int(r.in_flight)} for r in rows]


def _whole(row: dict[str, Any]) -> dict[str, Any]:
    # Totals summed by PostgreSQL arrive as whole Decimals (numeric): integers in JSON, as every other amount.
    return {name: int(value) if isinstance(value, Decimal) else value for name, value in row.items()}


@friendly_errors
def status(
    batch: list[str] = typer.Option([], "--batch", "-b", help="Batch id (repeatable). Default: latest."),
    tenant: str | None = typer.Option(None, "--tenant", "-t", help="Only this tenant's batches."),
    last: int = typer.Option(10, "--last", min=1, help="How many recent batches when none is named."),
    wait: float = typer.Option(
        0, "--wait", min=0, help="Seconds to wait until nothing is in flight; exit 3 if something still is."
    ),
    fmt: Format = FORMAT,
) -> None:
    """Show accepted, rejected, processed and in-flight payments per batch and currency.

    Warns (on stderr) when no relay is leading while accepted payments wait in the outbox for longer than
    REMIT_RELAY_BACKLOG_ALERT_SECONDS, when rows the broker refused (unroutable) have waited that long, and
    while a consumer's core-banking circuit breaker is open (since when, and what it means).
    Payments published directly over AMQP count under the correlation_id they name ("over amqp": how many of
    them): as accepted and processed once booked, as accepted and dead-lettered once dead-lettered.

    Example: remit status --tenant anz --wait 60
             remit status --format csv > status.csv
    """

    async def go(uow: UnitOfWorkFactory) -> StatusView:
        await check_known(uow, tenant, batch, dash="--")
        batches = batch or await recent_batches(uow, tenant, last, with_direct=True)
        rows = [r for r in await wait_until_settled(uow, batches, wait) if tenant in (None, r.tenant_id)]
        async with uow() as system:  # the relay's state is every tenant's: the operator's system scope
            relay = await relay_state(system.connection)
        return StatusView(rows, relay, await breaker_notice(uow, datetime.now(UTC)))

    view = run(with_uow(go))
    if fmt is Format.JSON:
        print_json(console, summary_records(view.rows))
    elif fmt is Format.CSV:
        print_csv(console, SUMMARY_FIELDS, summary_records(view.rows))
    else:
        print_table(console, summary_table(view.rows))
    threshold = get_settings().relay_backlog_alert_seconds
    breaker = view.breaker.describe(datetime.now(UTC)) if view.breaker else None
    for problem in (view.relay.problem(threshold), view.relay.refusals(threshold), breaker):
        if problem:
            err_console.print(line(("warning:", "bold yellow"), " ", problem))
    if wait and (left := still_in_flight(view.rows)):
        why = "; the core-banking circuit breaker is open (above)" if breaker else ""
        err_console.print(
            line(("not settled:", "bold red"), f" waited {wait:g}s for nothing to be in flight; {left}{why}")
        )
        raise typer.Exit(EXIT_STILL_IN_FLIGHT)


def still_in_flight(rows: list[SummaryRow]) -> str | None:
    """What --wait waited for and did not get, in one line: the payments and batches still in flight."""
    waiting = [r for r in rows if r.in_flight]
    if not waiting:
        return None
    batches = sorted({r.correlation_id for r in waiting})
    shown = ", ".join(batches[:5]) + (f" and {len(batches) - 5} more" if len(batches) > 5 else "")
    count = sum(r.in_flight for r in waiting)
    return f"{count} payment(s) of {len(batches)} batch(es) still in flight (not processed, not dead-lettered): {shown}"

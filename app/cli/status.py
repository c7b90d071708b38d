"""`remit status`: the per-batch, per-currency summary table; optionally wait until batches settle."""

import asyncio
import time

import typer
from rich.table import Table

from app.cli.common import console, friendly_errors, run, with_uow
from app.reporting.batch_summary import SummaryRow, batch_summary, recent_batches
from app.storage.unit_of_work import UnitOfWorkFactory


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
    table = Table(title="batches by currency (amounts in cents)")
    for column in (
        "tenant",
        "batch",
        "cur",
        "accepted",
        "cents",
        "rejected",
        "processed",
        "cents",
        "dead-lettered",
        "in flight",
    ):
        table.add_column(column, justify="left" if column in {"tenant", "batch", "cur"} else "right")
    for r in rows:
        table.add_row(
            r.tenant_id,
            r.correlation_id,
            r.currency,
            str(r.accepted),
            str(r.accepted_cents),
            str(r.rejected),
            str(r.processed),
            str(r.processed_cents),
            str(r.dead_lettered),
            str(r.in_flight),
        )
    return table


@friendly_errors
def status(
    batch: list[str] = typer.Option([], "--batch", "-b", help="Batch id (repeatable). Default: latest."),
    tenant: str | None = typer.Option(None, "--tenant", "-t", help="Only this tenant's batches."),
    last: int = typer.Option(10, "--last", min=1, help="How many recent batches when none is named."),
    wait: float = typer.Option(0, "--wait", min=0, help="Seconds to wait until nothing is in flight."),
) -> None:
    """Show accepted, rejected, processed and in-flight payments per batch and currency.

    Example: remit status --tenant anz --wait 60
    """

    async def go(uow: UnitOfWorkFactory) -> list[SummaryRow]:
        batches = batch or await recent_batches(uow, tenant, last)
        return await wait_until_settled(uow, batches, wait)

    rows = run(with_uow(go))
    console.print(summary_table(rows))
    if wait and any(r.in_flight for r in rows):
        raise typer.Exit(3)

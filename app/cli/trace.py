"""`remit trace`: where is this payment? Its whole life in order, found by message_id, payment_reference
or batch row: accepted, published, each failed delivery with its delay, dead-lettered, replayed or
discarded (by whom, why), processed, and what the last reconciliation said."""

from typing import Any

import typer
from rich.console import Group
from rich.panel import Panel
from rich.table import Table

from app.cli.common import console, friendly_errors, run, with_uow
from app.cli.listing import FORMAT, JSON, Format, chosen, free, keep, number, print_csv, print_json, print_table
from app.cli.safe_console import styled
from app.known_filters import check_known
from app.settings import get_settings
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tracing import wording
from app.tracing.lookup import PaymentQuery
from app.tracing.model import PaymentTrace
from app.tracing.service import trace_payment
from contracts.amounts import amount_text


@friendly_errors
def trace(
    identifier: str = typer.Argument(..., help="A message_id, a payment_reference, or a batch id with --row."),
    row: int | None = typer.Option(
        None, "--row", min=1, help="The row of the batch's file (as `remit submit` numbers rejected rows)."
    ),
    tenant: str | None = typer.Option(
        None, "--tenant", help="Only this tenant's payments (when several tenants use the id or reference)."
    ),
    fmt: Format = FORMAT,
    as_json: bool = JSON,
) -> None:
    """Show a payment's whole life in order with timestamps; account numbers masked.

    Examples:

    \b
      remit trace 0196b0a4-6f1e-7c3a-9d2b-5e8f0a1b2c3d
      remit trace PAY-ANZ-2025-00198432 --tenant anz
      remit trace bulk_anz_20250501_batch_0001 --row 7
      remit trace PAY-ANZ-2025-00198432 --format csv     # its events, a row each

    --format json prints the whole trace as one document; csv a row per event, with the payment's ids on each.
    """
    fmt = chosen(fmt, as_json)
    query = PaymentQuery(identifier, row)

    async def find(uow: UnitOfWorkFactory) -> PaymentTrace:
        await check_known(uow, tenant, dash="--")
        return await trace_payment(uow, query, tenant, core=get_settings().core_banking_label())

    found = run(with_uow(find))
    if fmt is Format.JSON:
        print_json(console, found)
    elif fmt is Format.CSV:
        print_csv(console, EVENT_FIELDS, event_records(found))
    else:
        print_table(console, trace_view(found))


EVENT_FIELDS = ["tenant_id", "message_id", "payment_reference", "correlation_id", "n", "at", "after_seconds", "stage",
                "summary", "details"]  # fmt: skip


def event_records(t: PaymentTrace) -> list[dict[str, Any]]:
    """A row per event, in order, each naming the payment, so that rows of several traces can be put together."""
    payment = {"tenant_id": t.tenant_id, "message_id": t.message_id, "payment_reference": t.payment_reference,
               "correlation_id": t.correlation_id}  # fmt: skip
    return [
        {
            **payment,
            "n": n,
            "at": e.at,
            "after_seconds": e.after_seconds,
            "stage": e.stage,
            "summary": e.summary,
            "details": e.details,
        }
        for n, e in enumerate(t.events, start=1)
    ]


def trace_view(t: PaymentTrace) -> Group:
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold")
    facts.add_column()
    amount = amount_text(t.amount_cents, t.currency)
    for name, value in (
        ("state", t.state),
        ("tenant", t.tenant_id or "(none)"),
        ("message_id", t.message_id or "(none: never a message)"),
        ("reference", t.payment_reference),
        ("batch", t.correlation_id),
        ("amount", amount),
        ("debtor", t.debtor),
        ("creditor", t.creditor),
        ("came as", t.origin),
        ("booking", wording.booking(t.booking)),
        ("reconciliation", wording.verdict(t.reconciliation) if t.message_id else "not reconciled (never a message)"),
    ):
        facts.add_row(name, str(value or ""))
    events = Table(
        number("#"), keep("at (UTC)"), keep("after"), keep("stage"), free("what happened"), title="its life, in order"
    )
    for n, e in enumerate(t.events, start=1):
        at = wording.moment(e.at).removesuffix(" UTC")
        events.add_row(str(n), at, wording.delay(e.after_seconds), e.stage, e.summary)
    # A panel's title is markup whatever the console says: given as Text, it is not parsed.
    return Group(Panel(facts, title=styled(f"payment {t.payment_reference or t.message_id}")), events)

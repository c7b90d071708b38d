"""How `remit queues list` and `remit queues peek` print: tables by app/cli/listing.py's rules, and the rows that
--format json and csv print."""

from dataclasses import asdict
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from app.cli.listing import free, keep, number, union
from app.observability.peek import Peeked, PeekedPayment
from app.observability.queue_overview import QueueOverview, format_age
from contracts.amounts import amount_text

QUEUE_FIELDS = ["name", "kind", "ready", "unacknowledged", "consumers", "publish_rate", "deliver_rate",
                "oldest_age_seconds"]  # fmt: skip
TENANT_FIELDS = ["tenant_id", "tier", "dedicated_queue", "status", "in_flight", "limit"]
PAYMENT_FIELDS = ["payment_reference", "amount_cents", "currency", "correlation_id", "debtor", "creditor"]
PEEK_FIELDS = ["position", "message_id", "tenant", "basis", "published_by", "timestamp", "age_seconds",
               "delivery_count", *PAYMENT_FIELDS, "body_prefix"]  # fmt: skip


def overview_tables(overview: QueueOverview) -> list[RenderableType]:
    queues = Table(
        keep("queue"),
        keep("kind"),
        number("ready"),
        number("unacked"),
        number("consumers"),
        number("in/s"),
        number("out/s"),
        keep("oldest"),
        title="Queues",
    )
    for q in overview.live.queues:
        queues.add_row(
            q.name,
            str(q.kind),
            f"{q.ready:,}",
            f"{q.unacknowledged:,}",
            str(q.consumers),
            f"{q.publish_rate:.1f}",
            f"{q.deliver_rate:.1f}",
            format_age(q.oldest_age_seconds, q.ready),
        )
    tenants = Table(
        keep("tenant"), keep("tier"), keep("status"), number("in flight"), number("limit"), number("used"),
        title="Payments in flight",
    )  # fmt: skip
    for t in overview.tenants:
        tier = f"{t.tier} (dedicated)" if t.dedicated_queue else t.tier
        tenants.add_row(t.tenant_id, tier, t.status, f"{t.in_flight:,}", f"{t.limit:,}", f"{t.used:.0%}")
    shown: list[RenderableType] = [queues]
    if overview.live.age_problem:
        shown.append(Text(f"oldest: unknown ({overview.live.age_problem})", style="yellow"))
    return [*shown, tenants]


def overview_csv(overview: QueueOverview) -> tuple[list[str], list[dict[str, Any]]]:
    """Queues and tenants as one CSV: `record` is `queue` or `tenant`."""
    queues = [{**asdict(q), "kind": str(q.kind)} for q in overview.live.queues]
    tenants = [asdict(t) for t in overview.tenants]
    return union(("queue", QUEUE_FIELDS, queues), ("tenant", TENANT_FIELDS, tenants))


def peek_records(peeked: Peeked) -> list[dict[str, Any]]:
    """A row per message, its payment's fields (from the outbox, accounts masked) flattened beside it."""
    return [_flat(p) for p in peeked.payments]


def _flat(p: PeekedPayment) -> dict[str, Any]:
    row = {name: value for name, value in asdict(p).items() if name != "payment"}
    return {**row, **(p.payment or {})}


def peek_table(queue: str, tenant: str | None, peeked: Peeked) -> RenderableType:
    whose = f" of tenant {tenant}" if tenant else ""
    tail = "the end of the queue" if peeked.end_of_queue else f"{peeked.scanned} positions read"
    table = Table(
        number("pos"),
        keep("message_id"),
        keep("tenant (by)"),
        keep("published by"),
        keep("age"),
        number("deliveries"),
        free("payment"),
        title=f"{queue}: {len(peeked.payments)} message(s){whose}, {tail}; nothing taken",
    )
    for p in peeked.payments:
        payment = (
            f"{p.payment['payment_reference']}  {amount_text(p.payment['amount_cents'], p.payment['currency'])}\n"
            f"{p.payment['debtor']} -> {p.payment['creditor']}"
            if p.payment
            else f"not from the outbox; body: {p.body_prefix}"
        )
        table.add_row(
            str(p.position),
            p.message_id or "",
            f"{p.tenant or '?'} ({p.basis})",
            p.published_by or "(none)",
            format_age(p.age_seconds, 1),
            str(p.delivery_count),
            payment,
        )
    return table

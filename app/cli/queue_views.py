"""How `remit queues list` and `remit queues peek` print: rich tables, amounts in cents as stored."""

from rich.console import RenderableType
from rich.table import Column, Table
from rich.text import Text

from app.observability.peek import Peeked
from app.observability.queue_overview import QueueOverview, format_age


def overview_tables(overview: QueueOverview) -> list[RenderableType]:
    queues = Table("queue", "kind", "ready", "unacked", "consumers", "in/s", "out/s", "oldest", title="Queues")
    for q in overview.live.queues:
        queues.add_row(
            q.name,
            str(q.kind),
            str(q.ready),
            str(q.unacknowledged),
            str(q.consumers),
            f"{q.publish_rate:.1f}",
            f"{q.deliver_rate:.1f}",
            format_age(q.oldest_age_seconds, q.ready),
        )
    tenants = Table("tenant", "tier", "status", "in flight", "limit", "used", title="Payments in flight")
    for t in overview.tenants:
        tier = f"{t.tier} (dedicated)" if t.dedicated_queue else t.tier
        tenants.add_row(t.tenant_id, tier, t.status, f"{t.in_flight:,}", f"{t.limit:,}", f"{t.used:.0%}")
    shown: list[RenderableType] = [queues]
    if overview.live.age_problem:
        shown.append(Text(f"oldest: unknown ({overview.live.age_problem})", style="yellow"))
    return [*shown, tenants]


def peek_table(queue: str, tenant: str | None, peeked: Peeked) -> RenderableType:
    whose = f" of tenant {tenant}" if tenant else ""
    tail = "the end of the queue" if peeked.end_of_queue else f"{peeked.scanned} positions read"
    table = Table(
        "pos",
        Column("message_id", no_wrap=True),
        "tenant (by)",
        "published by",
        "age",
        "deliveries",
        Column("payment", overflow="fold"),
        title=f"{queue}: {len(peeked.payments)} message(s){whose}, {tail}; nothing taken",
    )
    for p in peeked.payments:
        payment = (
            f"{p.payment['payment_reference']}  {p.payment['amount_cents']:,} {p.payment['currency']} (cents)\n"
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

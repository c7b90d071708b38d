"""Everything remit recorded about one payment, read by (tenant_id, message_id) from every table it touches."""

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Row, Table, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.tables import (
    batches,
    dead_letter_audit,
    dead_letter_replay_requests,
    dead_letters,
    delivery_attempts,
    ledger,
    outbox,
    processed_messages,
)
from app.tracing.model import PaymentKey

au, rq = dead_letter_audit.c, dead_letter_replay_requests.c


@dataclass(frozen=True, slots=True)
class Records:
    outbox: Row[Any] | None  # with its batch's source_name; None for a payment published directly
    attempts: list[Row[Any]]  # deliveries that did not succeed, in order
    dead_letters: list[Row[Any]]  # oldest first: a replay that fails again is a new dead letter
    audit: list[Row[Any]]  # replays, refusals, resolutions and discards (dry runs left out: nothing happened)
    processed: Row[Any] | None  # the idempotency record
    ledger: Row[Any] | None  # the booking

    @property
    def payment(self) -> Row[Any] | None:
        """The row that best describes the payment itself (reference, amount, currency, batch)."""
        return self.outbox or self.ledger or (self.dead_letters[-1] if self.dead_letters else None)


def of(table: Table, key: PaymentKey) -> ColumnElement[bool]:
    """This payment's rows: its tenant AND its message_id, never the message_id alone."""
    tenant = table.c.tenant_id.is_(None) if key.tenant_id is None else table.c.tenant_id == key.tenant_id
    return tenant & (table.c.message_id == key.message_id)


async def read_records(conn: AsyncConnection, key: PaymentKey) -> Records:
    accepted = select(outbox, batches.c.source_name).join(batches, batches.c.correlation_id == outbox.c.correlation_id)
    audit = (
        select(dead_letter_audit, rq.force)
        .outerjoin(dead_letter_replay_requests, rq.request_id == au.request_id)
        .where(of(dead_letter_audit, key), au.dry_run.is_(False))
        .order_by(au.audit_id)
    )
    return Records(
        outbox=(await conn.execute(accepted.where(of(outbox, key)))).first(),
        attempts=await _all(conn, delivery_attempts, key, delivery_attempts.c.attempt_id),
        dead_letters=await _all(conn, dead_letters, key, dead_letters.c.dead_letter_id),
        audit=list((await conn.execute(audit)).all()),
        processed=(await conn.execute(select(processed_messages).where(of(processed_messages, key)))).first(),
        ledger=(await conn.execute(select(ledger).where(of(ledger, key)).order_by(ledger.c.transfer_id))).first(),
    )


async def _all(conn: AsyncConnection, table: Table, key: PaymentKey, order: Any) -> list[Row[Any]]:
    return list((await conn.execute(select(table).where(of(table, key)).order_by(order))).all())

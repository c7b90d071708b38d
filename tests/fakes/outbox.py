"""An in-memory outbox, as the consumer side reads it. Tests accept payments into it with `accepted`."""

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from app.storage.ports.dead_letters import DeadLetterRecord
from contracts import PaymentMessage
from tests.fakes.database import FakeDatabase, FakeTransaction
from tests.fakes.dead_letters import TABLE as DEAD_LETTERS
from tests.fakes.ledger import TABLE as LEDGER

TABLE = "outbox"


@dataclass(frozen=True, slots=True)
class OutboxRow:
    tenant_id: str
    message_id: UUID
    correlation_id: str
    currency: str
    amount_cents: int
    expires_at: datetime
    published_at: datetime | None = None
    payment_reference: str = ""
    seq: int = 0  # its position in its batch
    row_number: int | None = None  # its line in its file
    payment_information_id: str | None = None  # pain.001 PmtInf/PmtInfId
    instruction_id: str | None = None  # pain.001 PmtId/InstrId


def accepted(db: FakeDatabase, payment: PaymentMessage, published: bool = True, row_number: int | None = None) -> None:
    """The payment as ingress accepts it, next in its batch (and the relay publishes it, unless told otherwise)."""
    batch = [o for o in db.rows(TABLE) if o.correlation_id == payment.correlation_id]
    row = OutboxRow(
        payment.tenant_id,
        payment.message_id,
        payment.correlation_id,
        payment.currency,
        payment.amount_cents,
        payment.timestamp_utc + timedelta(seconds=payment.ttl_seconds),
        db.clock() if published else None,
        payment.payment_reference,
        seq=len(batch) + 1,
        row_number=row_number,
    )
    db.tables[TABLE][payment.tenant_id, payment.message_id] = row


class FakeOutbox:
    def __init__(self, tx: FakeTransaction) -> None:
        self._tx = tx

    async def in_flight(self, tenant_id: str, now: datetime, excluding_batch: str | None = None) -> int:
        dead_letters: list[DeadLetterRecord] = self._tx.rows(DEAD_LETTERS)
        dead = {(d.tenant_id, d.message_id) for d in dead_letters}
        rows: list[OutboxRow] = self._tx.rows(TABLE)
        return sum(
            1
            for o in rows
            if o.tenant_id == tenant_id
            and o.expires_at > now
            and o.correlation_id != excluding_batch
            and self._tx.get(LEDGER, (o.tenant_id, o.message_id)) is None
            and (o.tenant_id, o.message_id) not in dead
        )

    async def backlog(self) -> dict[str, int]:
        rows: list[OutboxRow] = self._tx.rows(TABLE)
        tenants = {t.tenant_id: 0 for t in self._tx.rows("tenants") if t.status != "deleted"}  # tests/fakes/tenants.py
        return tenants | dict(Counter(o.tenant_id for o in rows if o.published_at is None))

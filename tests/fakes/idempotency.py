"""In-memory idempotency records."""

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from uuid import UUID

from app.storage.ports.idempotency import CoreTransfer, NewKeyGeneration
from contracts import PaymentMessage
from tests.fakes.database import FakeTransaction

TABLE = "processed_messages"
GENERATIONS = "transfer_key_generations"
OUTBOX = "outbox"  # tests/fakes/outbox.py's table, keyed (tenant_id, message_id) like this one


@dataclass(frozen=True, slots=True)
class IdempotencyRow:
    tenant_id: str
    message_id: UUID
    correlation_id: str
    attempt: int
    payment_digest: bytes | None
    processed_at: datetime
    core_transfer_id: str | None = None
    amount_cents: int | None = None
    currency: str | None = None
    source: str | None = None  # 'outbox' (a batch's payment) or 'amqp' (published directly: no outbox row)
    core_booked_at: datetime | None = None
    core_key_generation: int | None = None


class FakeIdempotencyRecords:
    def __init__(self, tx: FakeTransaction) -> None:
        self._tx = tx

    async def claim(self, payments: Sequence[PaymentMessage], digests: Sequence[bytes]) -> set[UUID]:
        claimed: set[UUID] = set()
        for payment, digest in zip(payments, digests, strict=True):
            key = (payment.tenant_id, payment.message_id)
            if self._tx.get(TABLE, key) is None:
                row = IdempotencyRow(
                    payment.tenant_id,
                    payment.message_id,
                    payment.correlation_id,
                    payment.retry_count + 1,
                    digest,
                    self._tx.db.clock(),
                    amount_cents=payment.amount_cents,
                    currency=payment.currency,
                    source="amqp" if self._tx.get(OUTBOX, key) is None else "outbox",
                )
                self._tx.insert(TABLE, key, row)
                claimed.add(payment.message_id)
        return claimed

    async def digests(self, tenant_id: str, message_ids: Collection[UUID]) -> dict[UUID, bytes | None]:
        rows = (self._tx.get(TABLE, (tenant_id, message_id)) for message_id in message_ids)
        return {row.message_id: row.payment_digest for row in rows if row is not None}

    async def release(self, tenant_id: str, message_ids: Collection[UUID]) -> None:
        for message_id in message_ids:
            self._tx.delete(TABLE, (tenant_id, message_id))

    async def record_transfers(self, tenant_id: str, transfers: Mapping[UUID, CoreTransfer]) -> None:
        for message_id, transfer in transfers.items():
            row = self._tx.get(TABLE, (tenant_id, message_id))
            if row is not None:
                recorded = replace(
                    row,
                    core_transfer_id=transfer.transfer_id,
                    core_booked_at=transfer.booked_at,
                    core_key_generation=transfer.key_generation,
                )
                self._tx.put(TABLE, (tenant_id, message_id), recorded)

    async def key_generations(self, tenant_id: str, message_ids: Collection[UUID]) -> dict[UUID, int]:
        latest: dict[UUID, int] = {}
        wanted = set(message_ids)
        for row in self._tx.rows(GENERATIONS):
            if row.tenant_id == tenant_id and row.message_id in wanted:
                latest[row.message_id] = max(latest.get(row.message_id, 0), row.generation)
        return latest

    async def open_key_generation(self, generation: NewKeyGeneration) -> bool:
        key = (generation.tenant_id, generation.message_id, generation.generation)
        if self._tx.get(GENERATIONS, key) is not None:
            return False
        self._tx.insert(GENERATIONS, key, generation)
        return True

    async def is_recorded(self, tenant_id: str, message_id: UUID) -> bool:
        return self._tx.get(TABLE, (tenant_id, message_id)) is not None

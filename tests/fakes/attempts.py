"""In-memory delivery attempts."""

from uuid import UUID

from app.storage.ports.attempts import AttemptRecord
from tests.fakes.database import FakeTransaction

TABLE = "delivery_attempts"


class FakeDeliveryAttempts:
    def __init__(self, tx: FakeTransaction) -> None:
        self._tx = tx

    async def record(self, attempt: AttemptRecord) -> None:
        self._tx.insert(TABLE, self._tx.db.next_id(TABLE), attempt)

    async def of_message(self, message_id: UUID, tenant_id: str | None) -> list[AttemptRecord]:
        rows: list[AttemptRecord] = self._tx.rows(TABLE)
        return [a for a in rows if a.message_id == message_id and a.tenant_id == tenant_id]

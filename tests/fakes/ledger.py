"""An in-memory ledger."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from contracts import PaymentMessage
from tests.fakes.database import FakeTransaction

TABLE = "ledger"


@dataclass(frozen=True, slots=True)
class LedgerRow:
    transfer_id: int
    tenant_id: str
    payment: PaymentMessage
    booked_at: datetime


class FakeLedger:
    def __init__(self, tx: FakeTransaction) -> None:
        self._tx = tx

    async def book(self, payments: Sequence[PaymentMessage]) -> None:
        # A payment booked already is refused (23505), and the transaction with it, as PostgreSQL aborts it.
        for payment in payments:
            row = LedgerRow(self._tx.db.next_id(TABLE), payment.tenant_id, payment, self._tx.db.clock())
            self._tx.insert(TABLE, (payment.tenant_id, payment.message_id), row)

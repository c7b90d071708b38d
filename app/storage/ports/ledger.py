"""remit's own ledger: the transfers the embedded core banked, one row per payment."""

from collections.abc import Sequence
from typing import Protocol

from contracts import PaymentMessage


class Ledger(Protocol):
    async def book(self, payments: Sequence[PaymentMessage]) -> None:
        """One ledger row per payment, in one statement. Never an upsert: the ledger's unique (tenant_id,
        message_id) is the last guard against paying twice, so a payment booked already is refused as a row
        (SQLSTATE 23505, app/storage/db_errors.py) and the whole statement with it."""
        ...

"""The core-banking port and its default adapter, which books transfers in our own ledger."""

from collections.abc import Collection, Mapping, Sequence
from typing import Protocol
from uuid import UUID

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from app.errors import AccountClosed, RemitError
from app.storage.tables import ledger
from contracts import PaymentMessage


class CoreBanking(Protocol):
    async def book(self, connection: AsyncConnection, payments: Sequence[PaymentMessage]) -> Mapping[UUID, RemitError]:
        """Book the transfers inside the caller's transaction; return the ones that failed, with why."""
        ...


class LedgerCoreBanking:
    """Books each transfer as a ledger row in the same transaction as its idempotency record."""

    def __init__(self, closed_accounts: Collection[str] = ()) -> None:
        self._closed = frozenset(closed_accounts)

    async def book(self, connection: AsyncConnection, payments: Sequence[PaymentMessage]) -> Mapping[UUID, RemitError]:
        failures: dict[UUID, RemitError] = {
            p.message_id: AccountClosed(f"creditor account {p.creditor_bsb} {p.creditor_account} is closed")
            for p in payments
            if p.creditor_account in self._closed
        }
        booked = [_ledger_row(p) for p in payments if p.message_id not in failures]
        if booked:
            await connection.execute(insert(ledger), booked)
        return failures


def _ledger_row(p: PaymentMessage) -> dict[str, object]:
    return {
        "message_id": p.message_id,
        "tenant_id": p.tenant_id,
        "correlation_id": p.correlation_id,
        "payment_reference": p.payment_reference,
        "amount_cents": p.amount_cents,
        "currency": p.currency,
        "debtor_bsb": p.debtor_bsb,
        "debtor_account": p.debtor_account,
        "creditor_bsb": p.creditor_bsb,
        "creditor_account": p.creditor_account,
    }

"""The core-banking port and its default adapter, which books transfers in our own ledger.

The adapter doubles as a deterministic simulator for tests and the demo: accounts can be marked closed
(a permanent failure) or flaky (a timeout on the first N attempts), and a transient failure rate picks
its victims by hashing message_id and attempt, so the same run always fails the same way.
"""

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol
from uuid import UUID

from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from app.errors import AccountClosed, CoreBankingTimeout, RemitError
from app.logs import mask_account
from app.storage.tables import ledger
from contracts import PaymentMessage


class CoreBanking(Protocol):
    async def book(self, connection: AsyncConnection, payments: Sequence[PaymentMessage]) -> Mapping[UUID, RemitError]:
        """Book the transfers inside the caller's transaction; return the ones that failed, with why."""
        ...


@dataclass(frozen=True, slots=True)
class FailureRules:
    closed_accounts: Collection[str] = ()
    flaky_accounts: Mapping[str, int] = field(default_factory=dict)  # account -> failing attempts
    transient_rate: float = 0.0

    def failure_for(self, p: PaymentMessage) -> RemitError | None:
        attempt = p.retry_count + 1
        if p.creditor_account in self.closed_accounts:
            return AccountClosed(f"creditor account {p.creditor_bsb} {mask_account(p.creditor_account)} is closed")
        if attempt <= self.flaky_accounts.get(p.creditor_account, 0):
            return CoreBankingTimeout(f"core banking timed out for {p.creditor_bsb} {mask_account(p.creditor_account)}")
        if self.transient_rate and _fraction(p.message_id, attempt) < self.transient_rate:
            return CoreBankingTimeout(f"core banking timed out (simulated, attempt {attempt})")
        return None


def _fraction(message_id: UUID, attempt: int) -> float:
    digest = hashlib.sha256(f"{message_id}:{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class LedgerCoreBanking:
    """Books each transfer as a ledger row in the same transaction as its idempotency record."""

    def __init__(self, rules: FailureRules | None = None) -> None:
        self._rules = rules or FailureRules()

    async def book(self, connection: AsyncConnection, payments: Sequence[PaymentMessage]) -> Mapping[UUID, RemitError]:
        failures = {p.message_id: e for p in payments if (e := self._rules.failure_for(p)) is not None}
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

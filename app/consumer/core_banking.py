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

from sqlalchemy import bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY, BIGINT, VARCHAR
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
from sqlalchemy.ext.asyncio import AsyncConnection

from app.errors import AccountClosed, CoreBankingTimeout, RemitError
from app.logs import mask_account
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
        booked = [p for p in payments if p.message_id not in failures]
        if booked:
            await connection.execute(_BOOK, _columns(booked))
        return failures


_TEXT_COLUMNS = (
    "tenant_id",
    "correlation_id",
    "payment_reference",
    "currency",
    "debtor_bsb",
    "debtor_account",
    "creditor_bsb",
    "creditor_account",
)
# One statement with one array per column: SQLAlchemy's executemany renders a multi-row VALUES with ten
# parameters per row, which cost more CPU than the rest of the commit (docs/benchmarks.md).
_BOOK = text(
    f"""
    INSERT INTO ledger (message_id, amount_cents, {", ".join(_TEXT_COLUMNS)})
    SELECT * FROM unnest(:message_id, :amount_cents, {", ".join(f":{c}" for c in _TEXT_COLUMNS)})
    """
).bindparams(
    bindparam("message_id", type_=ARRAY(PG_UUID(as_uuid=True))),
    bindparam("amount_cents", type_=ARRAY(BIGINT)),
    *(bindparam(c, type_=ARRAY(VARCHAR)) for c in _TEXT_COLUMNS),
)


def _columns(payments: Sequence[PaymentMessage]) -> dict[str, list[object]]:
    columns: dict[str, list[object]] = {
        "message_id": [p.message_id for p in payments],
        "amount_cents": [p.amount_cents for p in payments],
    }
    for name in _TEXT_COLUMNS:
        columns[name] = [getattr(p, name) for p in payments]
    return columns

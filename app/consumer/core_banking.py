"""The core-banking port and its default adapter, which books transfers in our own ledger (the embedded core;
app/consumer/core_http.py is the adapter to an external one, chosen by REMIT_CORE_BANKING_URL).

Tests that need failing accounts use the reference core's own accounts and faults (tests/corebank) or a
test-only adapter injected through app/bootstrap.py's Ports (tests/support/core.py); production has no
simulator.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from app.errors import MessageFailure
from app.storage.ports.ledger import Ledger
from contracts import PaymentMessage


@dataclass(frozen=True, slots=True)
class Booked:
    """The core booked the transfer."""

    transfer_id: str | None = None  # the core's id of it; None: the embedded ledger's row is the transfer
    replayed: bool = False  # the core's earlier outcome for the key: a retry, or found by a status query


CoreOutcome = Booked | MessageFailure
BOOKED_HERE = Booked()


class CoreBanking(Protocol):
    async def book(self, payments: Sequence[PaymentMessage], ledger: Ledger) -> list[CoreOutcome]:
        """Book one tenant's transfers (a transfer is identified by (tenant_id, message_id)); one outcome per
        payment, in the same positions: Booked, or the failure (retryable or permanent).

        Called inside remit's transaction for these payments, after their idempotency records are claimed and
        before it commits: the embedded adapter books in remit's own `ledger` there; an external one calls its
        core (which records the transfer under the payment's key) and remit's transaction then records what
        the core said. An answer that never came is not a failure to guess at: the adapter resolves it (asks
        the core) or reports a retryable unknown outcome, and the retry sends the same key."""
        ...


class LedgerCoreBanking:
    """Books each transfer as a row of remit's ledger, in the same transaction as its idempotency record."""

    async def book(self, payments: Sequence[PaymentMessage], ledger: Ledger) -> list[CoreOutcome]:
        if payments:
            await ledger.book(payments)
        return [BOOKED_HERE] * len(payments)

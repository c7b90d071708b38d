"""The core-banking port and its default adapter, which books transfers in our own ledger (the embedded core;
app/consumer/core_http.py is the adapter to an external one, chosen by REMIT_CORE_BANKING_URL).

Tests that need failing accounts use the reference core's own accounts and faults (tests/corebank) or a
test-only adapter injected through app/bootstrap.py's Ports (tests/support/core.py); production has no
simulator.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from uuid import UUID

from app.errors import MessageFailure
from app.storage.ports.ledger import Ledger
from contracts import PaymentMessage


@dataclass(frozen=True, slots=True)
class Booked:
    """The core booked the transfer."""

    transfer_id: str | None = None  # the core's id of it; None: the embedded ledger's row is the transfer
    replayed: bool = False  # the core's earlier outcome for the key: a retry, or found by a status query
    booked_at: datetime | None = None  # the core's own time of the booking (its recorded_at), when it says


CoreOutcome = Booked | MessageFailure
BOOKED_HERE = Booked()
# The transfer key generation of each payment that has one past the first (app/consumer/core_keys.py): the
# committer reads them beside the idempotency records for an external core; the embedded ledger has no keys.
Generations = Mapping[UUID, int]
NO_GENERATIONS: Generations = {}


class CoreBanking(Protocol):
    async def book(
        self, payments: Sequence[PaymentMessage], ledger: Ledger, generations: Generations = NO_GENERATIONS
    ) -> list[CoreOutcome]:
        """Book one tenant's transfers (a transfer is identified by (tenant_id, message_id)); one outcome per
        payment, in the same positions: Booked, or the failure (retryable or permanent). An external core gets
        each under its key of the payment's generation in `generations` (the first when it has none there).

        Called inside remit's transaction for these payments, after their idempotency records are claimed and
        before it commits: the embedded adapter books in remit's own `ledger` there; an external one calls its
        core (which records the transfer under the payment's key) and remit's transaction then records what
        the core said. An answer that never came is not a failure to guess at: the adapter resolves it (asks
        the core) or reports a retryable unknown outcome, and the retry sends the same key."""
        ...


class LedgerCoreBanking:
    """Books each transfer as a row of remit's ledger, in the same transaction as its idempotency record. Nothing
    outside remit remembers a payment, so key generations mean nothing here."""

    async def book(
        self, payments: Sequence[PaymentMessage], ledger: Ledger, generations: Generations = NO_GENERATIONS
    ) -> list[CoreOutcome]:
        if payments:
            await ledger.book(payments)
        return [BOOKED_HERE] * len(payments)

"""What ingress accepted (`outbox`), as the consumer side reads it: payments in flight and the relay's backlog.
(The publisher writes and relays the outbox with its own SQL, app/publisher/.)"""

from datetime import datetime
from typing import Protocol


class Outbox(Protocol):
    async def in_flight(self, tenant_id: str, now: datetime, excluding_batch: str | None = None) -> int:
        """The tenant's payments accepted at ingress and not expired that are neither booked (ledger) nor
        dead-lettered yet, matched on (tenant_id, message_id); without those of `excluding_batch` (the batch
        being admitted, whose own rows are already written)."""
        ...

    async def backlog(self) -> dict[str, int]:
        """Unpublished rows per tenant: every tenant not deleted (0 when none waits), and any other with rows."""
        ...

"""The idempotency records (`processed_messages`): one per payment that moved money, keyed by (tenant_id,
message_id), with the digest of what it moved and, for an external core, the core's transfer id."""

from collections.abc import Collection, Mapping, Sequence
from typing import Protocol
from uuid import UUID

from contracts import PaymentMessage


class IdempotencyRecords(Protocol):
    async def claim(self, payments: Sequence[PaymentMessage], digests: Sequence[bytes]) -> set[UUID]:
        """Record each payment (attempt retry_count + 1, its digest, amount and currency, and its source: 'outbox'
        when its tenant's outbox has it, else 'amqp', a direct publish) that has no record yet, all in one
        statement; return the message_ids recorded now. A record that exists already is left as it is."""
        ...

    async def digests(self, tenant_id: str, message_ids: Collection[UUID]) -> dict[UUID, bytes | None]:
        """The recorded digest of each of these records (None for a record older than digests)."""
        ...

    async def release(self, tenant_id: str, message_ids: Collection[UUID]) -> None:
        """Remove records claimed in this transaction whose booking failed: the retry needs the id free."""
        ...

    async def record_transfers(self, tenant_id: str, transfers: Mapping[UUID, str]) -> None:
        """The core's transfer id beside each record (an external core's; the embedded ledger's row is its own
        record)."""
        ...

    async def is_recorded(self, tenant_id: str, message_id: UUID) -> bool: ...

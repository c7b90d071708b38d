"""The idempotency records (`processed_messages`): one per payment that moved money, keyed by (tenant_id,
message_id), with the digest of what it moved and, for an external core, the core's transfer id, its time and
the key generation it was booked under; and the transfer key generations a forced replay opened beside the
message_id (`transfer_key_generations`, app/consumer/core_keys.py)."""

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from uuid import UUID

from contracts import PaymentMessage


@dataclass(frozen=True, slots=True)
class CoreTransfer:
    """What an external core said of a booking: its id of the transfer, its own time of it (None when it did not
    say) and the key generation it was booked under."""

    transfer_id: str
    booked_at: datetime | None
    key_generation: int


@dataclass(frozen=True, slots=True)
class NewKeyGeneration:
    """A transfer key generation a forced replay opens, after the core refused `replaces_key` for good."""

    tenant_id: str
    message_id: UUID
    generation: int  # at least 2
    replaces_key: str
    refused_reason: str | None
    opened_by: str
    dead_letter_id: int | None
    request_id: int | None
    opened_at: datetime


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

    async def record_transfers(self, tenant_id: str, transfers: Mapping[UUID, CoreTransfer]) -> None:
        """The core's transfer beside each record (an external core's; the embedded ledger's row is its own
        record)."""
        ...

    async def key_generations(self, tenant_id: str, message_ids: Collection[UUID]) -> dict[UUID, int]:
        """The latest transfer key generation of each of these payments that has one past the first."""
        ...

    async def open_key_generation(self, generation: NewKeyGeneration) -> bool:
        """Record a new generation; False when that generation of the payment exists already (another replay
        opened it: the key is the same either way)."""
        ...

    async def is_recorded(self, tenant_id: str, message_id: UUID) -> bool: ...

"""Delivery attempts that did not end in success (`delivery_attempts`), written before a message can be lost."""

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from uuid import UUID


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    message_id: UUID | None
    tenant_id: str | None  # the tenant the publisher's identity decided, not the one the message claims
    attempt: int
    outcome: str  # "retrying" or "dead_lettered"
    error_type: str | None
    error_message: str | None
    queue: str | None
    at: datetime


class DeliveryAttempts(Protocol):
    async def record(self, attempt: AttemptRecord) -> None: ...

    async def of_message(self, message_id: UUID, tenant_id: str | None) -> list[AttemptRecord]:
        """The attempts of this tenant's message, oldest first (another tenant's message of the same id is
        another message)."""
        ...

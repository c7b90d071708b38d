"""Records past retention: idempotency records, attempts, closed dead letters and transfer key generations, each
kind by its own age.

A record's cutoff is its tenant's retention_days, or the default; `bound` (the oldest cutoff of any tenant)
only narrows the search. Attempts of a message that still has an open dead letter never count as expired."""

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

RecordKind = Literal["processed_messages", "delivery_attempts", "dead_letters", "transfer_key_generations"]
RECORD_KINDS: tuple[RecordKind, ...] = (
    "processed_messages",
    "delivery_attempts",
    "dead_letters",
    "transfer_key_generations",
)


@dataclass(frozen=True, slots=True)
class Cutoff:
    now: datetime
    bound: datetime  # nothing younger than this is expired for any tenant
    default_days: int  # the retention of a tenant without its own


class ExpiredRecords(Protocol):
    async def count(self, kind: RecordKind, cutoff: Cutoff) -> int: ...

    async def delete(self, kind: RecordKind, cutoff: Cutoff, limit: int) -> int:
        """Delete at most `limit` expired records of this kind; return how many."""
        ...

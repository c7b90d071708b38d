"""The dead-letter store (`dead_letters`): every message remit could not process, as evidence, with its status."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol
from uuid import UUID

KnownField = Literal["tenant", "batch"]


@dataclass(frozen=True, slots=True)
class DeadLetterFilter:
    """Which dead letters. `tenant` is also the caller's scope: None means all tenants (admin)."""

    tenant: str | None = None
    reason: str | None = None
    batch: str | None = None
    currency: str | None = None
    status: str | None = None
    since: datetime | None = None  # last failed at or after
    until: datetime | None = None  # last failed before

    def narrows(self) -> bool:
        """True when any filter was given: a bulk replay needs one, or an explicit --all."""
        values = (self.tenant, self.reason, self.batch, self.currency, self.since, self.until)
        return any(v is not None for v in values)


@dataclass(frozen=True, slots=True)
class DeadLetterRecord:
    """One stored dead letter (see app/storage/tables.py for what each column means)."""

    dead_letter_id: int
    dedup_key: str
    message_id: UUID | None
    tenant_id: str | None
    correlation_id: str | None
    payment_reference: str | None
    amount_cents: int | None
    currency: str | None
    reason: str
    error_type: str | None
    error_message: str | None
    attempts: int
    first_failed_at: datetime
    last_failed_at: datetime
    original_queue: str | None
    body: bytes
    headers: dict[str, Any]
    status: str
    replay_of: int | None
    archived_at: datetime
    status_changed_at: datetime
    tenant_basis: str
    published_by: str | None
    claimed_tenant: str | None
    claims: dict[str, Any]
    security_event: bool
    body_length: int
    body_sha256: str
    body_truncated: bool
    payment_digest: bytes | None


# A new dead letter: the columns the archiver derived (app/deadletters/incoming.py, to_row and raw_row).
NewDeadLetter = Mapping[str, Any]

Grouping = Literal["total", "reason", "tenant", "age"]
# Age buckets by time since the (last) failure: (name, younger than), the last one (name, None) for the rest.
AgeBuckets = Sequence[tuple[str, timedelta | None]]
NO_TENANT = "(none)"  # the group of dead letters filed under no tenant


@dataclass(frozen=True, slots=True)
class StatRow:
    """One group and currency: how many dead letters, and the value at risk in that currency's minor unit.
    Amounts are never summed across currencies; `currency` None counts bodies whose amount is unreadable."""

    group: str
    currency: str | None
    count: int
    amount_cents: int


@dataclass(frozen=True, slots=True)
class OpenDeadLetters:
    """Open dead letters of one tenant (None: filed under none), reason and currency (None: unreadable)."""

    tenant_id: str | None
    reason: str
    currency: str | None
    count: int
    amount_cents: int


class DeadLetters(Protocol):
    async def add(self, dead_letter: NewDeadLetter) -> bool:
        """File a dead letter unless its dedup_key is filed already: then it is a copy of that failure, which
        takes the later last_failed_at, the larger attempts and the earlier first_failed_at, and False. Filed
        `already_processed` when its payment_digest is its tenant's processed payment under its message_id, else
        `open`. Its first_failed_at becomes
        the earliest failure of its message (this one, or an earlier dead letter or attempt of the same
        tenant's message), on this row and on the message's other dead letters. Dead letters of one message
        are filed one at a time, so each sees the others' failure times."""
        ...

    async def get(
        self, dead_letter_id: int, tenant: str | None, *, for_update: bool = False
    ) -> DeadLetterRecord | None:
        """One dead letter within the scope (tenant None: any); for_update locks it until the transaction ends."""
        ...

    async def newest(self, where: DeadLetterFilter, limit: int) -> list[DeadLetterRecord]:
        """Newest first."""
        ...

    async def ids(self, where: DeadLetterFilter) -> list[int]:
        """Every id the filter selects, oldest first."""
        ...

    async def recent_values(self, field: KnownField, tenant: str | None, limit: int) -> list[str]:
        """The distinct tenants or batches (correlation_id) of the scope's dead letters, the most recently
        filed first: the values a filter may name that no other table knows (a direct publisher's batch)."""
        ...

    async def set_status(self, dead_letter_id: int, status: str, now: datetime) -> None: ...

    async def totals(self, where: DeadLetterFilter, by: Grouping, ages: AgeBuckets, now: datetime) -> list[StatRow]:
        """Count and amount per group and currency, leaving out open ones whose payment was booked since they were
        filed (not money at risk), ordered by both: one group "all" (total), or per reason,
        per tenant (NO_TENANT for none) or per age bucket of `ages` at `now`."""
        ...

    async def count_security_events(self, where: DeadLetterFilter) -> int: ...

    async def open_by_tenant(self) -> list[OpenDeadLetters]:
        """Every open dead letter whose payment is not booked, counted by tenant, reason and currency (the store
        gauges)."""
        ...

    async def security_events_by_tenant(self) -> dict[str | None, int]:
        """Dead letters flagged as security events, per tenant (None: filed under none)."""
        ...

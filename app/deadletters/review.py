"""Reading the dead-letter store: list with filters, one dead letter in full, and the value at risk."""

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from app.deadletters.audit import AuditEntry, list_audit
from app.deadletters.masking import mask_json, mask_text, readable_body
from app.deadletters.query import DeadLetterFilter, get_dead_letter
from app.storage.ports.dead_letters import DeadLetterRecord, Grouping
from app.storage.ports.dead_letters import StatRow as StatRow
from app.storage.unit_of_work import UnitOfWorkFactory

# Age buckets for stats, by time since the (last) failure.
AGE_BUCKETS: tuple[tuple[str, timedelta | None], ...] = (
    ("<1h", timedelta(hours=1)),
    ("<24h", timedelta(hours=24)),
    ("<7d", timedelta(days=7)),
    ("older", None),
)


@dataclass(frozen=True, slots=True)
class DeadLetterSummary:
    dead_letter_id: int
    tenant_id: str | None
    correlation_id: str | None
    message_id: UUID | None
    payment_reference: str | None
    amount_cents: int | None
    currency: str | None
    reason: str
    error_type: str | None
    attempts: int
    first_failed_at: datetime
    last_failed_at: datetime
    status: str
    published_by: str | None  # the login RabbitMQ validated; None when the publisher set no user_id
    security_event: bool  # tenant_mismatch, or its bytes claimed another tenant or our own headers

    @classmethod
    def of(cls, row: DeadLetterRecord) -> "DeadLetterSummary":
        return cls(**{name: getattr(row, name) for name in cls.__slots__})


@dataclass(frozen=True, slots=True)
class Attempt:
    attempt: int
    outcome: str
    error_type: str | None
    error_message: str | None
    queue: str | None
    at: datetime


@dataclass(frozen=True, slots=True)
class DeadLetterDetail:
    summary: DeadLetterSummary
    error_message: str | None
    original_queue: str | None
    replay_of: int | None
    archived_at: datetime
    status_changed_at: datetime
    tenant_basis: str  # how tenant_id was decided (app/tenancy/identity.py)
    claimed_tenant: str | None  # the tenant its bytes claimed, when not its real one
    claims: dict[str, Any]  # remit-* headers an untrusted publisher sent: evidence, never believed
    headers: dict[str, Any]
    body_json: Any  # None when the body is not JSON (or is only a prefix, or nests too deep)
    body_text: str
    body_length: int  # of the whole message
    body_sha256: str  # of the whole message
    body_truncated: bool  # only the first body_kept bytes were kept
    body_kept: int
    masked: bool
    attempt_history: list[Attempt] = field(default_factory=list)
    audit: list[AuditEntry] = field(default_factory=list)


async def list_dead_letters(
    uow_factory: UnitOfWorkFactory, where: DeadLetterFilter, limit: int = 50
) -> list[DeadLetterSummary]:
    """Newest first."""
    async with uow_factory() as uow:
        return [DeadLetterSummary.of(row) for row in await uow.dead_letters.newest(where, limit)]


async def show_dead_letter(
    uow_factory: UnitOfWorkFactory, dead_letter_id: int, tenant: str | None = None, unmask: bool = False
) -> DeadLetterDetail:
    async with uow_factory() as uow:
        row = await get_dead_letter(uow.dead_letters, dead_letter_id, tenant)
        history = await _attempts(uow_factory, row.message_id, row.tenant_id)
    body_json, body_text = readable_body(row.body, unmask, complete=not row.body_truncated)
    return DeadLetterDetail(
        summary=DeadLetterSummary.of(row),
        error_message=row.error_message if unmask or row.error_message is None else mask_text(row.error_message),
        original_queue=row.original_queue,
        replay_of=row.replay_of,
        archived_at=row.archived_at,
        status_changed_at=row.status_changed_at,
        tenant_basis=row.tenant_basis,
        claimed_tenant=row.claimed_tenant,
        claims=row.claims if unmask else mask_json(row.claims),
        headers=row.headers if unmask else mask_json(row.headers),
        body_json=body_json,
        body_text=body_text,
        body_length=row.body_length,
        body_sha256=row.body_sha256,
        body_truncated=row.body_truncated,
        body_kept=len(row.body),
        masked=not unmask,
        attempt_history=[_masked_attempt(a, unmask) for a in history],
        audit=await list_audit(uow_factory, tenant, dead_letter_id),
    )


async def _attempts(uow_factory: UnitOfWorkFactory, message_id: UUID | None, tenant: str | None) -> list[Attempt]:
    """The attempts of this tenant's message: attempts are recorded under the identity tenant, like the
    dead letter, and another tenant's message of the same id is another message."""
    if message_id is None:
        return []
    async with uow_factory() as uow:
        records = await uow.attempts.of_message(message_id, tenant)
    return [Attempt(r.attempt, r.outcome, r.error_type, r.error_message, r.queue, r.at) for r in records]


def _masked_attempt(attempt: Attempt, unmask: bool) -> Attempt:
    if unmask or attempt.error_message is None:
        return attempt
    return replace(attempt, error_message=mask_text(attempt.error_message))


@dataclass(frozen=True, slots=True)
class DeadLetterStats:
    status: str | None
    total: list[StatRow]
    by_reason: list[StatRow]
    by_tenant: list[StatRow]
    by_age: list[StatRow]
    security_events: int  # dead letters flagged as security events among these


async def dead_letter_stats(
    uow_factory: UnitOfWorkFactory, where: DeadLetterFilter, now: datetime | None = None
) -> DeadLetterStats:
    """Counts and value at risk (by default of open dead letters) by reason, tenant and age."""
    now = now or datetime.now(UTC)
    groupings: tuple[Grouping, ...] = ("total", "reason", "tenant", "age")
    async with uow_factory() as uow:
        total, by_reason, by_tenant, by_age = [
            await uow.dead_letters.totals(where, by, AGE_BUCKETS, now) for by in groupings
        ]
        security_events = await uow.dead_letters.count_security_events(where)
    return DeadLetterStats(where.status, total, by_reason, by_tenant, by_age, security_events)

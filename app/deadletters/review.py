"""Reading the dead-letter store: list with filters, one dead letter in full, and the value at risk."""

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from sqlalchemy import Row, case, func, literal, select

from app.deadletters.audit import AuditEntry, list_audit
from app.deadletters.masking import mask_json, mask_text, readable_body
from app.deadletters.query import DeadLetterFilter, dl, get_dead_letter
from app.storage.tables import dead_letters, delivery_attempts
from app.storage.unit_of_work import UnitOfWorkFactory

da = delivery_attempts.c

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

    @classmethod
    def of(cls, row: Row[Any]) -> "DeadLetterSummary":
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
    headers: dict[str, Any]
    body_json: Any  # None when the body is not JSON
    body_text: str
    masked: bool
    attempt_history: list[Attempt] = field(default_factory=list)
    audit: list[AuditEntry] = field(default_factory=list)


async def list_dead_letters(
    uow_factory: UnitOfWorkFactory, where: DeadLetterFilter, limit: int = 50
) -> list[DeadLetterSummary]:
    """Newest first."""
    query = select(dead_letters).where(where.where()).order_by(dl.dead_letter_id.desc()).limit(limit)
    async with uow_factory() as uow:
        return [DeadLetterSummary.of(row) for row in (await uow.connection.execute(query)).all()]


async def show_dead_letter(
    uow_factory: UnitOfWorkFactory, dead_letter_id: int, tenant: str | None = None, unmask: bool = False
) -> DeadLetterDetail:
    async with uow_factory() as uow:
        row = await get_dead_letter(uow.connection, dead_letter_id, tenant)
        history = await _attempts(uow_factory, row.message_id, tenant)
    body_json, body_text = readable_body(row.body, unmask)
    return DeadLetterDetail(
        summary=DeadLetterSummary.of(row),
        error_message=row.error_message if unmask or row.error_message is None else mask_text(row.error_message),
        original_queue=row.original_queue,
        replay_of=row.replay_of,
        archived_at=row.archived_at,
        status_changed_at=row.status_changed_at,
        headers=row.headers if unmask else mask_json(row.headers),
        body_json=body_json,
        body_text=body_text,
        masked=not unmask,
        attempt_history=[_masked_attempt(a, unmask) for a in history],
        audit=await list_audit(uow_factory, tenant, dead_letter_id),
    )


async def _attempts(uow_factory: UnitOfWorkFactory, message_id: UUID | None, tenant: str | None) -> list[Attempt]:
    if message_id is None:
        return []
    query = select(delivery_attempts).where(da.message_id == message_id).order_by(da.attempt_id)
    if tenant is not None:
        # Attempts are recorded under the body's tenant; a scoped caller sees only its own.
        query = query.where(da.tenant_id == tenant)
    async with uow_factory() as uow:
        rows = (await uow.connection.execute(query)).all()
    return [Attempt(r.attempt, r.outcome, r.error_type, r.error_message, r.queue, r.at) for r in rows]


def _masked_attempt(attempt: Attempt, unmask: bool) -> Attempt:
    if unmask or attempt.error_message is None:
        return attempt
    return replace(attempt, error_message=mask_text(attempt.error_message))


@dataclass(frozen=True, slots=True)
class StatRow:
    """One group and currency: how many dead letters, and the value at risk in that currency's minor unit.
    Amounts are never summed across currencies; `currency` None counts bodies whose amount is unreadable."""

    group: str
    currency: str | None
    count: int
    amount_cents: int


@dataclass(frozen=True, slots=True)
class DeadLetterStats:
    status: str | None
    total: list[StatRow]
    by_reason: list[StatRow]
    by_tenant: list[StatRow]
    by_age: list[StatRow]


async def dead_letter_stats(
    uow_factory: UnitOfWorkFactory, where: DeadLetterFilter, now: datetime | None = None
) -> DeadLetterStats:
    """Counts and value at risk (by default of open dead letters) by reason, tenant and age."""
    now = now or datetime.now(UTC)
    # Keys computed once in a subquery, so GROUP BY names columns rather than repeating expressions.
    keyed = (
        select(
            literal("all").label("total"),
            dl.reason.label("reason"),
            func.coalesce(dl.tenant_id, "(none)").label("tenant"),
            _age_bucket(now).label("age"),
            dl.currency,
            dl.amount_cents,
        )
        .where(where.where())
        .subquery()
    )
    results: dict[str, list[StatRow]] = {}
    async with uow_factory() as uow:
        for name in ("total", "reason", "tenant", "age"):
            key = keyed.c[name]
            query = (
                select(key, keyed.c.currency, func.count(), func.coalesce(func.sum(keyed.c.amount_cents), 0))
                .group_by(key, keyed.c.currency)
                .order_by(key, keyed.c.currency)
            )
            rows = (await uow.connection.execute(query)).all()
            results[name] = [StatRow(str(g), currency, int(n), int(cents)) for g, currency, n, cents in rows]
    return DeadLetterStats(where.status, results["total"], results["reason"], results["tenant"], results["age"])


def _age_bucket(now: datetime) -> Any:
    whens = [(dl.last_failed_at > now - limit, name) for name, limit in AGE_BUCKETS if limit is not None]
    return case(*whens, else_=AGE_BUCKETS[-1][0])

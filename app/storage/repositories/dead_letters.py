"""The dead-letter store in PostgreSQL."""

from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import ColumnElement, DateTime, and_, case, exists, func, literal, not_, select, text, true, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.ports.dead_letters import (
    NO_TENANT,
    AgeBuckets,
    DeadLetterFilter,
    DeadLetterRecord,
    Grouping,
    KnownField,
    NewDeadLetter,
    OpenDeadLetters,
    StatRow,
)
from app.storage.tables import dead_letters, delivery_attempts, processed_messages

dl = dead_letters.c

# The two-key form keeps these locks apart from the one-key advisory locks (the relay's leadership).
_LOCK_MESSAGE = text("SELECT pg_advisory_xact_lock(1684828468, hashtext(:message))")  # b"dlq4"


class SqlDeadLetters:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def add(self, dead_letter: NewDeadLetter) -> bool:
        conn = self._connection
        message_id, tenant = dead_letter["message_id"], dead_letter.get("tenant_id")
        # Dead letters of one message arrive concurrently (a task per delivery); serialise them so each sees the
        # others' failure times when it settles first_failed_at, and a second copy finds the first one filed.
        await conn.execute(_LOCK_MESSAGE, {"message": f"{tenant}|{message_id or dead_letter['dedup_key']}"})
        first = (await conn.execute(_insert(dead_letter))).scalar_one_or_none()
        filed = first is not None
        if not filed:
            # Another copy of the same failure (a crash before the ack, a replayed refusal, the broker's copy): one
            # dead letter, which now says when the payment last failed and the most attempts any copy counted.
            first = (await conn.execute(_merge(dead_letter))).scalar_one()
        if message_id is not None:
            await conn.execute(
                update(dead_letters)
                .where(_same_message(message_id, tenant), dl.first_failed_at > first)
                .values(first_failed_at=first)
            )
        return filed

    async def get(
        self, dead_letter_id: int, tenant: str | None, *, for_update: bool = False
    ) -> DeadLetterRecord | None:
        query = select(dead_letters).where(dl.dead_letter_id == dead_letter_id, _in_scope(tenant))
        row = (await self._connection.execute(query.with_for_update() if for_update else query)).one_or_none()
        return DeadLetterRecord(**row._mapping) if row is not None else None

    async def newest(self, where: DeadLetterFilter, limit: int) -> list[DeadLetterRecord]:
        query = select(dead_letters).where(_where(where)).order_by(dl.dead_letter_id.desc()).limit(limit)
        return [DeadLetterRecord(**row._mapping) for row in await self._connection.execute(query)]

    async def ids(self, where: DeadLetterFilter) -> list[int]:
        query = select(dl.dead_letter_id).where(_where(where)).order_by(dl.dead_letter_id)
        return list((await self._connection.execute(query)).scalars().all())

    async def recent_values(self, field: KnownField, tenant: str | None, limit: int) -> list[str]:
        column = dl.tenant_id if field == "tenant" else dl.correlation_id
        query = (
            select(column)
            .where(column.is_not(None), _in_scope(tenant))
            .group_by(column)
            .order_by(func.max(dl.dead_letter_id).desc())
            .limit(limit)
        )
        return list((await self._connection.execute(query)).scalars())

    async def set_status(self, dead_letter_id: int, status: str, now: datetime) -> None:
        await self._connection.execute(
            update(dead_letters).where(dl.dead_letter_id == dead_letter_id).values(status=status, status_changed_at=now)
        )

    async def totals(self, where: DeadLetterFilter, by: Grouping, ages: AgeBuckets, now: datetime) -> list[StatRow]:
        # The key computed once in a subquery, so GROUP BY names a column rather than repeating an expression.
        keys = {
            "total": literal("all"),
            "reason": dl.reason,
            "tenant": func.coalesce(dl.tenant_id, NO_TENANT),
            "age": _age_bucket(ages, now),
        }
        keyed = (
            select(keys[by].label("key"), dl.currency, dl.amount_cents)
            .where(_where(where), not_(_open_but_booked()))
            .subquery()
        )
        query = (
            select(keyed.c.key, keyed.c.currency, func.count(), func.coalesce(func.sum(keyed.c.amount_cents), 0))
            .group_by(keyed.c.key, keyed.c.currency)
            .order_by(keyed.c.key, keyed.c.currency)
        )
        rows = await self._connection.execute(query)
        return [StatRow(str(key), currency, int(n), int(cents)) for key, currency, n, cents in rows]

    async def count_security_events(self, where: DeadLetterFilter) -> int:
        query = select(func.count()).where(_where(where), dl.security_event)
        return int((await self._connection.execute(query)).scalar_one())

    async def open_by_tenant(self) -> list[OpenDeadLetters]:
        query = (
            select(dl.tenant_id, dl.reason, dl.currency, func.count(), func.coalesce(func.sum(dl.amount_cents), 0))
            .where(dl.status == "open", not_(_open_but_booked()))
            .group_by(dl.tenant_id, dl.reason, dl.currency)
        )
        rows = await self._connection.execute(query)
        return [
            OpenDeadLetters(tenant, reason, currency, int(n), int(cents)) for tenant, reason, currency, n, cents in rows
        ]

    async def security_events_by_tenant(self) -> dict[str | None, int]:
        query = select(dl.tenant_id, func.count()).where(dl.security_event).group_by(dl.tenant_id)
        return {tenant: int(n) for tenant, n in await self._connection.execute(query)}


def _where(where: DeadLetterFilter) -> ColumnElement[bool]:
    clauses: list[ColumnElement[bool]] = [true()]
    for column, value in (
        (dl.tenant_id, where.tenant),
        (dl.reason, where.reason),
        (dl.correlation_id, where.batch),
        (dl.currency, where.currency.upper() if where.currency else None),
        (dl.status, where.status),
    ):
        if value is not None:
            clauses.append(column == value)
    if where.since is not None:
        clauses.append(dl.last_failed_at >= where.since)
    if where.until is not None:
        clauses.append(dl.last_failed_at < where.until)
    return and_(*clauses)


def _in_scope(tenant: str | None) -> ColumnElement[bool]:
    return true() if tenant is None else dl.tenant_id == tenant


def _age_bucket(ages: AgeBuckets, now: datetime) -> Any:
    whens = [(dl.last_failed_at > now - younger, name) for name, younger in ages if younger is not None]
    return case(*whens, else_=ages[-1][0])


def _same_message(message_id: UUID, tenant: str | None) -> ColumnElement[bool]:
    """Dead letters of this message: message ids are the tenant's own, so another tenant's never count."""
    return and_(dl.message_id == message_id, dl.tenant_id.is_not_distinct_from(tenant))


def _booked(tenant: Any, message_id: Any, digest: Any) -> ColumnElement[bool]:
    """The tenant's idempotency record holds this very payment (the same digest) under this message_id."""
    pm = processed_messages.c
    return exists().where(pm.tenant_id == tenant, pm.message_id == message_id, pm.payment_digest == digest)


def _open_but_booked() -> ColumnElement[bool]:
    """Filed open, its payment booked since (the consumer's commit raced the broker's dead-lettering of a copy)."""
    return and_(dl.status == "open", _booked(dl.tenant_id, dl.message_id, dl.payment_digest))


def _status(dead_letter: NewDeadLetter) -> Any:
    tenant, message_id, digest = (dead_letter.get(k) for k in ("tenant_id", "message_id", "payment_digest"))
    if tenant is None or message_id is None or digest is None:
        return "open"
    return case((_booked(tenant, message_id, digest), "already_processed"), else_="open")


def _insert(dead_letter: NewDeadLetter) -> Any:
    first = _earliest_failure(dead_letter["message_id"], dead_letter.get("tenant_id"), dead_letter["last_failed_at"])
    return (
        insert(dead_letters)
        .values(**dead_letter, first_failed_at=first, status=_status(dead_letter))
        .on_conflict_do_nothing(index_elements=["dedup_key"])
        .returning(dl.first_failed_at)
    )


def _merge(dead_letter: NewDeadLetter) -> Any:
    """The copy's failure folded into the dead letter filed first: its reason, error, body and status stay."""
    failed_at = literal(dead_letter["last_failed_at"], DateTime(timezone=True))
    return (
        update(dead_letters)
        .where(dl.dedup_key == dead_letter["dedup_key"])
        .values(
            last_failed_at=func.greatest(dl.last_failed_at, failed_at),
            first_failed_at=func.least(dl.first_failed_at, failed_at),
            attempts=func.greatest(dl.attempts, int(dead_letter.get("attempts") or 0)),
        )
        .returning(dl.first_failed_at)
    )


def _earliest_failure(message_id: UUID | None, tenant: str | None, failed_at: datetime) -> Any:
    """This failure, or an earlier one of the same message (an earlier dead letter or failed attempt):
    after a replay fails again, first_failed_at still says when the trouble began."""
    this = literal(failed_at, DateTime(timezone=True))
    if message_id is None:
        return this
    earlier_dead_letter = (
        select(func.min(dl.first_failed_at)).where(_same_message(message_id, tenant))
    ).scalar_subquery()
    earlier_attempt = (
        select(func.min(delivery_attempts.c.at)).where(
            delivery_attempts.c.message_id == message_id, delivery_attempts.c.tenant_id.is_not_distinct_from(tenant)
        )
    ).scalar_subquery()
    return func.least(this, earlier_dead_letter, earlier_attempt)  # LEAST ignores NULLs

"""Write dead letters to PostgreSQL, idempotently: the same failure event delivered twice is one row."""

import hashlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime, func, literal, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.exc import DataError, IntegrityError

from app.deadletters.incoming import IncomingDeadLetter, to_row
from app.storage.tables import dead_letters, delivery_attempts
from app.storage.unit_of_work import UnitOfWorkFactory

log = logging.getLogger("remit.archiver")


class DeadLetterArchive:
    def __init__(self, uow_factory: UnitOfWorkFactory, clock: Callable[[], datetime] = lambda: datetime.now(UTC)):
        self._uow_factory = uow_factory
        self._clock = clock

    async def archive(self, incoming: IncomingDeadLetter) -> bool:
        """Store one dead letter; False when this failure event was already stored. Raises only when
        PostgreSQL is unreachable (the delivery then goes back to the queue)."""
        try:
            row = to_row(incoming, self._clock())
        except Exception:  # the parser is defensive; this is the last line so odd input is never lost
            log.exception("could not read a dead letter; storing it raw")
            row = raw_row(incoming, self._clock(), "could not read the headers")
        try:
            return await self._insert(row)
        except (DataError, IntegrityError) as exc:
            # PostgreSQL refused a value we derived: keep the evidence with nothing derived.
            log.warning("dead letter refused by PostgreSQL (%s); storing it raw", exc.orig)
            return await self._insert(raw_row(incoming, self._clock(), f"stored raw: {type(exc.orig).__name__}"))

    async def _insert(self, row: dict[str, Any]) -> bool:
        async with self._uow_factory() as uow:
            conn = uow.connection
            message_id = row["message_id"]
            if message_id is not None:
                # Dead letters of one message arrive concurrently (a task per delivery); serialise them so
                # each sees the others' failure times when it settles first_failed_at.
                await conn.execute(_LOCK_MESSAGE, {"message_id": str(message_id)})
            first = (await conn.execute(insert_dead_letter(row))).scalar_one_or_none()
            if first is not None and message_id is not None:
                await conn.execute(
                    update(dead_letters)
                    .where(dead_letters.c.message_id == message_id, dead_letters.c.first_failed_at > first)
                    .values(first_failed_at=first)
                )
            await uow.commit()
        return first is not None


# The two-key form keeps these locks apart from the one-key advisory locks (the relay's leadership).
_LOCK_MESSAGE = text("SELECT pg_advisory_xact_lock(1684828468, hashtext(:message_id))")  # b"dlq4"


def insert_dead_letter(row: dict[str, Any]) -> Any:
    return (
        insert(dead_letters)
        .values(**row, first_failed_at=earliest_failure(row["message_id"], row["last_failed_at"]))
        .on_conflict_do_nothing(index_elements=["dedup_key"])
        .returning(dead_letters.c.first_failed_at)
    )


def earliest_failure(message_id: Any, failed_at: datetime) -> Any:
    """This failure, or an earlier one of the same message (an earlier dead letter or failed attempt):
    after a replay fails again, first_failed_at still says when the trouble began."""
    this = literal(failed_at, DateTime(timezone=True))
    if message_id is None:
        return this
    earlier_dead_letter = (
        select(func.min(dead_letters.c.first_failed_at)).where(dead_letters.c.message_id == message_id)
    ).scalar_subquery()
    earlier_attempt = (
        select(func.min(delivery_attempts.c.at)).where(delivery_attempts.c.message_id == message_id)
    ).scalar_subquery()
    return func.least(this, earlier_dead_letter, earlier_attempt)  # LEAST ignores NULLs


def raw_row(incoming: IncomingDeadLetter, now: datetime, note: str) -> dict[str, Any]:
    """The body alone, for input whose derived fields could not be stored."""
    digest = hashlib.sha256(incoming.body + repr(sorted(map(str, incoming.headers))).encode()).hexdigest()
    return {
        "dedup_key": f"raw:{digest}",
        "message_id": None,
        "reason": "unknown",
        "error_message": note,
        "last_failed_at": now,
        "body": incoming.body,
        "headers": {},
    }

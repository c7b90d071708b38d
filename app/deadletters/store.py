"""Write dead letters to PostgreSQL, idempotently: every copy of one payment's failure is one row (dedup_key)."""

import hashlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from app.deadletters.incoming import Archiving, IncomingDeadLetter, bounded_body, clean, to_row
from app.storage.db_errors import describe, row_refused
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.identity import NOBODY

log = logging.getLogger("remit.archiver")


class DeadLetterArchive:
    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        archiving: Archiving,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ):
        self._uow_factory = uow_factory
        self._archiving = archiving
        self._clock = clock

    async def archive(self, incoming: IncomingDeadLetter) -> bool:
        """Store one dead letter; False when it is a copy of a failure already stored (that row is updated). Raises
        only when PostgreSQL is unreachable (the delivery then goes back to the queue)."""
        try:
            row = to_row(incoming, self._clock(), self._archiving)
        except Exception:  # the parser is defensive; this is the last line so odd input is never lost
            log.exception("could not read a dead letter; storing it raw")
            row = raw_row(incoming, self._clock(), "could not read the headers", self._archiving.body_max_bytes)
        try:
            return await self._insert(row)
        except Exception as exc:
            if not row_refused(exc):  # PostgreSQL is unreachable: the delivery goes back to the queue
                raise
            # PostgreSQL refused a value we derived: keep the evidence with nothing derived.
            log.warning("dead letter refused by PostgreSQL (%s); storing it raw", describe(exc))
            note = f"stored raw: {type(getattr(exc, 'orig', exc)).__name__}"
            return await self._insert(raw_row(incoming, self._clock(), note, self._archiving.body_max_bytes))

    async def _insert(self, row: dict[str, Any]) -> bool:
        async with self._uow_factory() as uow:
            filed = await uow.dead_letters.add(row)
            await uow.commit()
        return filed


def raw_row(incoming: IncomingDeadLetter, now: datetime, note: str, body_max_bytes: int) -> dict[str, Any]:
    """The body alone (bounded), for input whose derived fields could not be stored. Filed under no tenant:
    only operators see it."""
    body = bounded_body(incoming.body, {}, body_max_bytes)
    headers = repr(sorted(map(str, incoming.headers))).encode()
    return {
        "dedup_key": f"raw:{hashlib.sha256(body.sha256.encode() + headers).hexdigest()}",
        "message_id": None,
        "tenant_basis": NOBODY,
        "published_by": clean(incoming.user_id, 255),
        "reason": "unknown",
        "error_message": note,
        "last_failed_at": now,
        "body": body.stored,
        "body_length": body.length,
        "body_sha256": body.sha256,
        "body_truncated": body.truncated,
        "headers": {},
    }

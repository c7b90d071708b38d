"""The audit trail: who replayed, resolved or discarded which dead letter, when, why, and whether for real."""

import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import Row, func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.tables import dead_letter_audit
from app.storage.unit_of_work import UnitOfWorkFactory

au = dead_letter_audit.c

REPLAY = "replay"
DISCARD = "discard"
RESOLVE = "resolve"


def default_actor() -> str:
    return os.environ.get("USER") or os.environ.get("LOGNAME") or "unknown"


@dataclass(frozen=True, slots=True)
class AuditEntry:
    audit_id: int
    at: datetime
    actor: str
    action: str
    dead_letter_id: int
    message_id: UUID | None
    tenant_id: str | None
    why: str | None
    outcome: str
    dry_run: bool

    @classmethod
    def of(cls, row: Row[Any]) -> "AuditEntry":
        return cls(**{name: getattr(row, name) for name in cls.__slots__})


async def record(
    conn: AsyncConnection,
    dead_letter: Row[Any],
    *,
    actor: str,
    action: str,
    outcome: str,
    dry_run: bool,
    why: str | None = None,
    message_id: UUID | None = None,
    at: datetime | None = None,
) -> None:
    """Written in the caller's transaction, so the trail and the status change commit together."""
    await conn.execute(
        insert(dead_letter_audit).values(
            actor=actor,
            action=action,
            dead_letter_id=dead_letter.dead_letter_id,
            message_id=message_id or dead_letter.message_id,
            tenant_id=dead_letter.tenant_id,
            why=why,
            outcome=outcome,
            dry_run=dry_run,
            **({"at": at} if at is not None else {}),
        )
    )


async def replays_used(conn: AsyncConnection, message_id: UUID) -> int:
    """Real (not dry-run) replays of this message_id so far, across all its dead letters."""
    query = select(func.count()).where(au.message_id == message_id, au.action == REPLAY, au.dry_run.is_(False))
    return int((await conn.execute(query)).scalar_one())


async def list_audit(
    uow_factory: UnitOfWorkFactory,
    tenant: str | None = None,
    dead_letter_id: int | None = None,
    limit: int = 100,
) -> list[AuditEntry]:
    query = select(dead_letter_audit).order_by(au.audit_id.desc()).limit(limit)
    if tenant is not None:
        query = query.where(au.tenant_id == tenant)
    if dead_letter_id is not None:
        query = query.where(au.dead_letter_id == dead_letter_id)
    async with uow_factory() as uow:
        return [AuditEntry.of(row) for row in (await uow.connection.execute(query)).all()]

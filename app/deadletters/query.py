"""Selecting dead letters: the filters every review command shares, and the tenant scope."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Row, and_, select, true, update
from sqlalchemy.ext.asyncio import AsyncConnection

from app.deadletters.errors import DeadLetterNotFound
from app.storage.tables import dead_letters

dl = dead_letters.c


@dataclass(frozen=True, slots=True)
class DeadLetterFilter:
    """Which dead letters. `tenant` is also the caller's scope: None means all tenants (admin)."""

    tenant: str | None = None
    reason: str | None = None
    batch: str | None = None
    currency: str | None = None
    status: str | None = None
    since: datetime | None = None
    until: datetime | None = None

    def narrows(self) -> bool:
        """True when any filter was given: a bulk replay needs one, or an explicit --all."""
        values = (self.tenant, self.reason, self.batch, self.currency, self.since, self.until)
        return any(v is not None for v in values)

    def where(self) -> ColumnElement[bool]:
        clauses: list[ColumnElement[bool]] = [true()]
        for column, value in (
            (dl.tenant_id, self.tenant),
            (dl.reason, self.reason),
            (dl.correlation_id, self.batch),
            (dl.currency, self.currency.upper() if self.currency else None),
            (dl.status, self.status),
        ):
            if value is not None:
                clauses.append(column == value)
        if self.since is not None:
            clauses.append(dl.last_failed_at >= self.since)
        if self.until is not None:
            clauses.append(dl.last_failed_at < self.until)
        return and_(*clauses)


def in_scope(tenant: str | None) -> ColumnElement[bool]:
    return true() if tenant is None else dl.tenant_id == tenant


async def get_dead_letter(
    conn: AsyncConnection, dead_letter_id: int, tenant: str | None, *, for_update: bool = False
) -> Row[Any]:
    """One dead letter within the scope. Another tenant's id reads exactly like a missing one."""
    query = select(dead_letters).where(dl.dead_letter_id == dead_letter_id, in_scope(tenant))
    row = (await conn.execute(query.with_for_update() if for_update else query)).one_or_none()
    if row is None:
        scope = f" for tenant {tenant}" if tenant else ""
        raise DeadLetterNotFound(f"no dead letter {dead_letter_id}{scope}; `remit dlq list` shows the ids")
    return row


async def set_status(conn: AsyncConnection, dead_letter_id: int, status: str, now: datetime) -> None:
    await conn.execute(
        update(dead_letters).where(dl.dead_letter_id == dead_letter_id).values(status=status, status_changed_at=now)
    )

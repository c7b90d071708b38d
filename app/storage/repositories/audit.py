"""The dead-letter audit trail in PostgreSQL."""

from dataclasses import asdict
from uuid import UUID

from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.ports.audit import AuditEntry, NewAuditEntry
from app.storage.tables import dead_letter_audit

au = dead_letter_audit.c


class SqlDeadLetterAudit:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def add(self, entry: NewAuditEntry) -> None:
        values = {name: value for name, value in asdict(entry).items() if name != "at" or value is not None}
        await self._connection.execute(insert(dead_letter_audit).values(**values))

    async def count_real(self, message_id: UUID, tenant_id: str | None, action: str) -> int:
        query = select(func.count()).where(
            au.message_id == message_id,
            au.tenant_id.is_not_distinct_from(tenant_id),
            au.action == action,
            au.dry_run.is_(False),
        )
        return int((await self._connection.execute(query)).scalar_one())

    async def entries(self, tenant_id: str | None, dead_letter_id: int | None, limit: int) -> list[AuditEntry]:
        query = select(dead_letter_audit).order_by(au.audit_id.desc()).limit(limit)
        if tenant_id is not None:
            query = query.where(au.tenant_id == tenant_id)
        if dead_letter_id is not None:
            query = query.where(au.dead_letter_id == dead_letter_id)
        return [AuditEntry(**row._mapping) for row in await self._connection.execute(query)]

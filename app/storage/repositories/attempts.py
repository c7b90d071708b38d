"""Delivery attempts in PostgreSQL."""

from dataclasses import asdict
from uuid import UUID

from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.ports.attempts import AttemptRecord
from app.storage.tables import delivery_attempts

da = delivery_attempts.c


class SqlDeliveryAttempts:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def record(self, attempt: AttemptRecord) -> None:
        await self._connection.execute(insert(delivery_attempts).values(**asdict(attempt)))

    async def of_message(self, message_id: UUID, tenant_id: str | None) -> list[AttemptRecord]:
        query = (
            select(
                da.message_id, da.tenant_id, da.attempt, da.outcome, da.error_type, da.error_message, da.queue, da.at
            )
            .where(da.message_id == message_id, da.tenant_id.is_not_distinct_from(tenant_id))
            .order_by(da.attempt_id)
        )
        return [AttemptRecord(**row._mapping) for row in await self._connection.execute(query)]

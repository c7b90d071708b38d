"""The outbox in PostgreSQL, as the consumer side reads it."""

from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

_IN_FLIGHT = text(
    """
    SELECT count(*) FROM outbox o
    WHERE o.tenant_id = :tenant AND o.expires_at > :now AND o.correlation_id IS DISTINCT FROM CAST(:batch AS text)
      AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.tenant_id = o.tenant_id AND l.message_id = o.message_id)
      AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.tenant_id = o.tenant_id AND d.message_id = o.message_id)
    """
)
# Every tenant not deleted, 0 when nothing of it waits: a gauge with no sample reads as "no data", not as "nothing".
_BACKLOG = text(
    """
    SELECT coalesce(t.tenant_id, w.tenant_id) AS tenant_id, coalesce(w.n, 0) AS n
    FROM (SELECT tenant_id FROM tenants WHERE status <> 'deleted') t
    FULL JOIN (SELECT tenant_id, count(*) AS n FROM outbox WHERE published_at IS NULL GROUP BY tenant_id) w
      ON w.tenant_id = t.tenant_id
    """
)


class SqlOutbox:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def in_flight(self, tenant_id: str, now: datetime, excluding_batch: str | None = None) -> int:
        params = {"tenant": tenant_id, "now": now, "batch": excluding_batch}
        return int((await self._connection.execute(_IN_FLIGHT, params)).scalar_one())

    async def backlog(self) -> dict[str, int]:
        return {row.tenant_id: int(row.n) for row in await self._connection.execute(_BACKLOG)}

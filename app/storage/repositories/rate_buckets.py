"""The publish-rate buckets in PostgreSQL."""

from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.ports.rate_buckets import StoredBucket

# The upsert also locks the row until commit (the no-op update takes the row lock).
_LOCK = text(
    """
    INSERT INTO rate_buckets (tenant_id, tokens, byte_tokens, updated_at)
    VALUES (:tenant, :cap, :byte_cap, :now)
    ON CONFLICT (tenant_id) DO UPDATE SET tenant_id = EXCLUDED.tenant_id
    RETURNING tokens, byte_tokens, updated_at
    """
)
_STORE = text(
    "UPDATE rate_buckets SET tokens = :tokens, byte_tokens = :bytes, updated_at = :now WHERE tenant_id = :tenant"
)


class SqlRateBuckets:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def lock(self, tenant_id: str, full_tokens: float, full_byte_tokens: float, now: datetime) -> StoredBucket:
        params = {"tenant": tenant_id, "cap": full_tokens, "byte_cap": full_byte_tokens, "now": now}
        row = (await self._connection.execute(_LOCK, params)).one()
        return StoredBucket(row.tokens, row.byte_tokens, row.updated_at)

    async def store(self, tenant_id: str, tokens: float, byte_tokens: float, now: datetime) -> None:
        params = {"tenant": tenant_id, "tokens": tokens, "bytes": byte_tokens, "now": now}
        await self._connection.execute(_STORE, params)

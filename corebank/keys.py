"""Idempotency keys as PostgreSQL advisory locks: held by the transaction that is booking a key, so a second
request with the same key can tell "running" from "recorded" without waiting for the first."""

from collections.abc import Sequence

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

# The seed of hashtextextended: the core's own space of 64-bit advisory lock ids.
SPACE = 0x636F7265
# Take a key's lock for this transaction without waiting: false when another running transaction holds it.
# (corebank/booking.py claims a request's keys in the statement that locks its accounts.)
TRY_CLAIM = "pg_try_advisory_xact_lock(hashtextextended({key}, :space))"

# A bigint advisory lock shows in pg_locks as classid (high 32 bits) and objid (low 32 bits), objsubid 1.
_RUNNING = text(
    """
    WITH held AS (
        SELECT (classid::bigint << 32) | objid::bigint AS id FROM pg_locks
        WHERE locktype = 'advisory' AND objsubid = 1 AND granted
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
    )
    SELECT k FROM unnest(CAST(:keys AS text[])) AS k WHERE hashtextextended(k, :space) IN (SELECT id FROM held)
    """
)


async def running(conn: AsyncConnection, keys: Sequence[str]) -> set[str]:
    """The keys a running transaction holds, read without taking any lock (a status query must not cause a 409)."""
    result = await conn.execute(_RUNNING, {"keys": list(keys), "space": SPACE})
    return set(result.scalars())

"""Per-tenant limits, checked in the transaction that accepts a batch, so every ingress process (CLI,
HTTP workers) shares them: messages in flight, and publish rate as two token buckets (payments per
second and bytes per second) kept in PostgreSQL. Over a limit the whole batch is refused, with when to
retry; nothing already accepted is touched."""

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.errors import BatchRefused

# A bucket holds a minute of the tenant's rate: a bulk file may arrive at once, but not faster for long.
BURST_SECONDS = 60.0


class LimitExceeded(BatchRefused):
    """Over a tenant limit: HTTP 429 with Retry-After, or a CLI message saying when to retry."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = max(1, math.ceil(retry_after))


@dataclass(frozen=True, slots=True)
class BatchLoad:
    payments: int
    bytes: int


_IN_FLIGHT = text(
    """
    SELECT count(*) FROM outbox o
    WHERE o.tenant_id = :tenant AND o.expires_at > :now
      AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.message_id = o.message_id)
      AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.message_id = o.message_id)
    """
)
_BUCKET = text(
    """
    INSERT INTO rate_buckets (tenant_id, tokens, byte_tokens, updated_at)
    VALUES (:tenant, :cap, :byte_cap, :now)
    ON CONFLICT (tenant_id) DO UPDATE SET tenant_id = EXCLUDED.tenant_id
    RETURNING tokens, byte_tokens, updated_at
    """
)
_TAKE = text(
    "UPDATE rate_buckets SET tokens = :tokens, byte_tokens = :bytes, updated_at = :now WHERE tenant_id = :tenant"
)


async def admit(conn: AsyncConnection, tenant: Row[Any], load: BatchLoad, now: datetime) -> None:
    await _check_in_flight(conn, tenant, load, now)
    await _take_tokens(conn, tenant, load, now)


async def _check_in_flight(conn: AsyncConnection, tenant: Row[Any], load: BatchLoad, now: datetime) -> None:
    in_flight = int((await conn.execute(_IN_FLIGHT, {"tenant": tenant.tenant_id, "now": now})).scalar_one())
    if in_flight + load.payments > tenant.max_in_flight:
        raise LimitExceeded(
            f"tenant {tenant.tenant_id!r} has {in_flight} payments in flight; {load.payments} more would pass its "
            f"limit of {tenant.max_in_flight}. Retry when some have been processed.",
            retry_after=30,
        )


async def _take_tokens(conn: AsyncConnection, tenant: Row[Any], load: BatchLoad, now: datetime) -> None:
    rate, byte_rate = tenant.publish_rate_per_second, tenant.publish_bytes_per_second
    cap, byte_cap = rate * BURST_SECONDS, byte_rate * BURST_SECONDS
    if load.payments > cap or load.bytes > byte_cap:
        raise LimitExceeded(
            f"a batch of {load.payments} payments ({load.bytes} bytes) is larger than tenant {tenant.tenant_id!r} may "
            f"send at once ({int(cap)} payments, {int(byte_cap)} bytes): split the file.",
            retry_after=BURST_SECONDS,
        )
    params = {"tenant": tenant.tenant_id, "cap": cap, "byte_cap": byte_cap, "now": now}
    bucket = (await conn.execute(_BUCKET, params)).one()  # the upsert also locks the row until commit
    elapsed = max((now - bucket.updated_at).total_seconds(), 0.0)
    tokens = min(cap, bucket.tokens + rate * elapsed)
    byte_tokens = min(byte_cap, bucket.byte_tokens + byte_rate * elapsed)
    if tokens < load.payments or byte_tokens < load.bytes:
        wait = max((load.payments - tokens) / rate, (load.bytes - byte_tokens) / byte_rate)
        raise LimitExceeded(
            f"tenant {tenant.tenant_id!r} is over its publish rate ({rate} payments/s, {byte_rate} bytes/s); "
            f"retry in {math.ceil(wait)} s.",
            retry_after=wait,
        )
    await conn.execute(
        _TAKE,
        {"tenant": tenant.tenant_id, "tokens": tokens - load.payments, "bytes": byte_tokens - load.bytes, "now": now},
    )

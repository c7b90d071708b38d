"""In-memory publish-rate buckets."""

from dataclasses import dataclass
from datetime import datetime

from app.storage.ports.rate_buckets import StoredBucket
from tests.fakes.database import FakeTransaction

TABLE = "rate_buckets"


@dataclass(frozen=True, slots=True)
class BucketRow:
    tenant_id: str
    bucket: StoredBucket


class FakeRateBuckets:
    def __init__(self, tx: FakeTransaction) -> None:
        self._tx = tx

    async def lock(self, tenant_id: str, full_tokens: float, full_byte_tokens: float, now: datetime) -> StoredBucket:
        row: BucketRow | None = self._tx.get(TABLE, tenant_id)
        if row is None:
            row = BucketRow(tenant_id, StoredBucket(full_tokens, full_byte_tokens, now))
            self._tx.put(TABLE, tenant_id, row)
        return row.bucket

    async def store(self, tenant_id: str, tokens: float, byte_tokens: float, now: datetime) -> None:
        self._tx.put(TABLE, tenant_id, BucketRow(tenant_id, StoredBucket(tokens, byte_tokens, now)))

"""Each tenant's two publish-rate token buckets (`rate_buckets`): payments and bytes, shared by every process."""

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True, slots=True)
class StoredBucket:
    tokens: float
    byte_tokens: float
    updated_at: datetime  # when the tokens were last stored (refill is the caller's arithmetic)


class RateBuckets(Protocol):
    async def lock(self, tenant_id: str, full_tokens: float, full_byte_tokens: float, now: datetime) -> StoredBucket:
        """The tenant's buckets as last stored (made full at `now` if it has none), locked until the transaction
        ends, so that concurrent takers of one tenant go one after the other."""
        ...

    async def store(self, tenant_id: str, tokens: float, byte_tokens: float, now: datetime) -> None: ...

"""AMQP header names remit reads and writes. Our own names: x- headers belong to the broker."""

from collections.abc import Mapping
from typing import Any

TENANT = "tenantUUID"
REASON = "remit-reason"
ERROR_TYPE = "remit-error-type"
ERROR_MESSAGE = "remit-error"
ATTEMPTS = "remit-attempts"
ORIGINAL_QUEUE = "remit-original-queue"
FAILED_AT = "remit-failed-at"
REPLAY_OF = "remit-replay-of"
PUBLISHED_AT = "remit-published-at"  # epoch milliseconds of the relay's publish, for latency


def published_at(headers: Mapping[str, Any] | None) -> float | None:
    """The publish stamp (PUBLISHED_AT) in epoch seconds, or None when it is missing or not a number."""
    stamp = (headers or {}).get(PUBLISHED_AT)
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        return stamp / 1000
    return None

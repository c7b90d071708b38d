"""AMQP header names remit reads and writes. Our own names: x- headers belong to the broker.

Every `remit-*` header is believed only on a message a trusted publisher sent (app/tenancy/identity.py):
a tenant publishing directly controls all of its headers, so from anyone else they are claims.
"""

import math
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
PREFIX = "remit-"
# Set by the consumer when it dead-letters or retries a delivery: who really published it (the user_id
# RabbitMQ validated, or absent) and the tenant that identity decided.
PUBLISHED_BY = "remit-published-by"
IDENTITY_TENANT = "remit-tenant"
# The delivery's own remit-* headers when an untrusted publisher sent them (a table): kept as evidence,
# never believed.
CLAIMS = "remit-claims"
# A body cut to a bounded prefix before it travels on (oversize): its full length and SHA-256.
BODY_TRUNCATED = "remit-body-truncated"
BODY_LENGTH = "remit-body-length"
BODY_SHA256 = "remit-body-sha256"
# Properties the consumer could not read (app/messaging/amqp_guard.py): why, and the raw content header's length
# and SHA-256. The message travels on with what could be read.
PROPERTIES_UNREADABLE = "remit-properties-unreadable"
PROPERTIES_LENGTH = "remit-properties-length"
PROPERTIES_SHA256 = "remit-properties-sha256"


def published_at(headers: Mapping[str, Any] | None) -> float | None:
    """The publish stamp (PUBLISHED_AT) in epoch seconds, or None when it is missing or not a finite number (a
    direct publisher can send a NaN or an infinity: no time, and one NaN makes a histogram's sum NaN for good)."""
    stamp = (headers or {}).get(PUBLISHED_AT)
    if isinstance(stamp, int | float) and not isinstance(stamp, bool) and math.isfinite(stamp):
        return stamp / 1000
    return None

"""Why a message was dead-lettered, and what each reason allows."""

# Reasons the consumer writes in the remit-reason header (app/consumer/failures.py).
INVALID = "invalid"
TENANT_MISMATCH = "tenant_mismatch"
PERMANENT_FAILURE = "permanent_failure"
UNKNOWN_TENANT = "unknown_tenant"
RETRIES_EXHAUSTED = "retries_exhausted"
EXPIRED = "expired"
# Reasons only the broker gives (x-death) or that nobody gave.
REJECTED = "rejected"
UNKNOWN = "unknown"

# Replaying these cannot succeed unless someone fixed the cause, so replay needs --force.
PERMANENT = frozenset({INVALID, TENANT_MISMATCH, PERMANENT_FAILURE, UNKNOWN_TENANT})

# x-death reasons (RabbitMQ 3.10 and 4.x) mapped to ours. delivery_limit means the consumer crashed or
# failed to settle the delivery that many times: a crash loop, so its retries are exhausted.
BROKER_REASONS = {
    "expired": EXPIRED,
    "delivery_limit": RETRIES_EXHAUSTED,
    "rejected": REJECTED,
    "maxlen": REJECTED,
}

OPEN = "open"
REPLAYED = "replayed"
RESOLVED = "resolved"
DISCARDED = "discarded"
STATUSES = (OPEN, REPLAYED, RESOLVED, DISCARDED)

"""Why a message was dead-lettered, and what each reason allows."""

# Reasons the consumer writes in the remit-reason header (app/consumer/failures.py).
INVALID = "invalid"
TENANT_MISMATCH = "tenant_mismatch"
PERMANENT_FAILURE = "permanent_failure"
UNKNOWN_TENANT = "unknown_tenant"
# The core refused the transfer (app/errors.py CoreRefusal): recorded under the payment's key for good.
ACCOUNT_CLOSED = "account_closed"
UNKNOWN_ACCOUNT = "unknown_account"
INSUFFICIENT_FUNDS = "insufficient_funds"
CURRENCY_NOT_HELD = "currency_not_held"
# The core holds the payment's key for a different transfer.
CORE_KEY_CONFLICT = "core_key_conflict"
RETRIES_EXHAUSTED = "retries_exhausted"
EXPIRED = "expired"
OVERSIZE = "oversize"
UNREADABLE_PROPERTIES = "unreadable_properties"  # its AMQP properties could not be read (app/messaging/amqp_guard.py)
OVER_LIMIT = "over_limit"  # a direct publisher over its tenant's rate or in-flight limit: replayable as it is
TENANT_SUSPENDED = "tenant_suspended"
DUPLICATE_CONFLICT = "duplicate_conflict"  # its message_id was already used by its tenant for another payment
# Reasons only the broker gives (x-death) or that nobody gave.
REJECTED = "rejected"
UNKNOWN = "unknown"

# Every reason a dead letter can carry: what a reason filter may name.
REASONS = (
    INVALID,
    TENANT_MISMATCH,
    PERMANENT_FAILURE,
    UNKNOWN_TENANT,
    ACCOUNT_CLOSED,
    UNKNOWN_ACCOUNT,
    INSUFFICIENT_FUNDS,
    CURRENCY_NOT_HELD,
    CORE_KEY_CONFLICT,
    RETRIES_EXHAUSTED,
    EXPIRED,
    OVERSIZE,
    UNREADABLE_PROPERTIES,
    OVER_LIMIT,
    TENANT_SUSPENDED,
    DUPLICATE_CONFLICT,
    REJECTED,
    UNKNOWN,
)

# Replaying these cannot succeed unless someone fixed the cause, so replay needs --force.
PERMANENT = frozenset(
    {
        INVALID,
        TENANT_MISMATCH,
        PERMANENT_FAILURE,
        UNKNOWN_TENANT,
        OVERSIZE,
        UNREADABLE_PROPERTIES,
        TENANT_SUSPENDED,
        DUPLICATE_CONFLICT,
        ACCOUNT_CLOSED,
        UNKNOWN_ACCOUNT,
        INSUFFICIENT_FUNDS,
        CURRENCY_NOT_HELD,
        CORE_KEY_CONFLICT,
    }
)

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
# Filed for a payment its tenant's idempotency record holds already (booked before the broker dead-lettered a copy
# of it): not money at risk, never replayed.
ALREADY_PROCESSED = "already_processed"
STATUSES = (OPEN, REPLAYED, RESOLVED, DISCARDED, ALREADY_PROCESSED)

"""AMQP header names remit reads and writes. Our own names: x- headers belong to the broker."""

TENANT = "tenantUUID"
REASON = "remit-reason"
ERROR_TYPE = "remit-error-type"
ERROR_MESSAGE = "remit-error"
ATTEMPTS = "remit-attempts"
ORIGINAL_QUEUE = "remit-original-queue"
FAILED_AT = "remit-failed-at"
REPLAY_OF = "remit-replay-of"
PUBLISHED_AT = "remit-published-at"  # epoch milliseconds of the relay's publish, for latency

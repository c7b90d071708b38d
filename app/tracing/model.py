"""What a trace says: the payment, each event of its life in order with its time, and the last
reconciliation's word on it. Account numbers are already masked here."""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

# Stages, in the order a payment meets them (events at the same instant sort this way).
REJECTED = "rejected"  # at validation: it never became a message
# Another row of the tenant's files with this payment's reference, rejected at validation: not this payment.
OTHER_ROW_REJECTED = "other_row_rejected"  # for a fault of its own (a first try that this payment resubmitted)
ACCEPTED = "accepted"  # written to the outbox in the transaction that accepted its batch
DUPLICATE_REFUSED = "duplicate_refused"  # as a duplicate of this payment: it moved no money
PUBLISHED = "published"  # the broker confirmed it
ATTEMPT_FAILED = "attempt_failed"  # a delivery that did not succeed: retrying, or dead-lettered
DEAD_LETTERED = "dead_lettered"  # stored in the dead-letter store
REPLAYED = "replayed"
REPLAY_REFUSED = "replay_refused"
RESOLVED = "resolved"  # a replay found it already processed
DISCARDED = "discarded"
PROCESSED = "processed"  # its idempotency record and its booking committed together
STAGES = (
    REJECTED,
    OTHER_ROW_REJECTED,
    ACCEPTED,
    DUPLICATE_REFUSED,
    PUBLISHED,
    ATTEMPT_FAILED,
    DEAD_LETTERED,
    REPLAYED,
    REPLAY_REFUSED,
    RESOLVED,
    DISCARDED,
    PROCESSED,
)

# Where a payment came from.
BULK_FILE = "bulk file"
DIRECT = "direct AMQP publish"  # no outbox row: traced from what the consumer recorded
VALIDATION = "rejected at validation"


@dataclass(frozen=True, slots=True)
class PaymentKey:
    """A payment is (tenant_id, message_id): two tenants may use the same message_id for two payments.
    tenant_id is None only for a dead letter whose publisher could not be tied to any tenant."""

    tenant_id: str | None
    message_id: UUID


@dataclass(frozen=True, slots=True)
class Event:
    at: datetime
    stage: str
    summary: str
    details: dict[str, Any] = field(default_factory=dict)
    after_seconds: float | None = None  # since the previous event: the delay a person asks about


# Where a payment's money moved.
EXTERNAL_CORE = "external core"
IN_PROCESS_LEDGER = "in-process ledger"


@dataclass(frozen=True, slots=True)
class Booking:
    """Where the money moved, read from where it happened. An external core (REMIT_CORE_BANKING_URL) booked it
    when remit recorded the core's transfer id (`processed_messages.core_transfer_id`): then the booking is the
    core's transfer, at the core's own time, under the key the core knows it by, and remit's ledger row is only
    remit's copy of it. Otherwise the in-process ledger's row is the booking."""

    system: str  # EXTERNAL_CORE or IN_PROCESS_LEDGER
    transfer_id: str  # that system's id of the transfer: the core's, or the ledger row's
    booked_at: datetime | None  # that system's own time of it (None: an external core's time remit did not record)
    ledger_transfer_id: int | None = None  # remit's ledger row: the booking itself, or remit's copy of the core's
    core: str | None = None  # the external core's name (REMIT_CORE_BANKING_NAME, else its address)
    core_transfer_id: str | None = None  # the core's id of the transfer, as remit recorded it
    core_key: str | None = None  # the idempotency key the core booked it under (app/consumer/core_keys.py)
    recorded_at: datetime | None = None  # remit's idempotency record of it: when its transaction began


@dataclass(frozen=True, slots=True)
class ReconciliationVerdict:
    """What the last finished reconciliation run said about this payment."""

    run_id: UUID
    as_of: datetime
    verdict: str  # "break", "no break", or "not yet reconciled" (it came after the run's as-of time)
    break_status: str | None = None  # unexpected, mismatch, duplicate, missing
    detail: str | None = None
    first_seen_at: datetime | None = None
    age_seconds: int | None = None  # the break's age at that run


@dataclass(frozen=True, slots=True)
class PaymentTrace:
    tenant_id: str | None
    message_id: UUID | None  # None for a row rejected at validation
    payment_reference: str | None
    correlation_id: str | None
    amount_cents: int | None  # in the currency's minor unit
    currency: str | None
    debtor: str | None  # BSB and masked account
    creditor: str | None
    origin: str
    state: str
    events: list[Event]
    booking: Booking | None
    reconciliation: ReconciliationVerdict | None

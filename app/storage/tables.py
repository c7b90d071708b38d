"""SQLAlchemy Core tables. alembic/ owns the schema; these mirror it (a test compares the two)."""

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Numeric,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)


def _now() -> "Column[datetime]":
    return Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now())


tenants = Table(
    "tenants",
    metadata,
    Column("tenant_id", String(32), primary_key=True),
    Column("name", Text, nullable=False),
    Column("tier", String(16), nullable=False, server_default="basic"),
    Column("status", String(16), nullable=False, server_default="active"),
    Column("default_ttl_seconds", Integer, nullable=False, server_default="86400"),
    Column("max_message_bytes", Integer, nullable=False, server_default="65536"),
    Column("publish_rate_per_second", Integer, nullable=False, server_default="1000"),
    Column("publish_bytes_per_second", Integer, nullable=False, server_default="10000000"),
    Column("max_in_flight", Integer, nullable=False, server_default="100000"),
    # Bytes of payments accepted and not yet settled (migration 0015): the stored-bytes quota.
    Column("max_bytes_in_flight", BigInteger, nullable=False, server_default="1073741824"),
    Column("dedicated_queue", Boolean, nullable=False, server_default=text("false")),
    # Days kept after the fact (processed records, attempts, closed dead letters); NULL = the default.
    Column("retention_days", Integer),
    _now(),
    # When `remit tenants delete --confirm` finished (status 'deleted'); the retention counts from here.
    Column("deleted_at", DateTime(timezone=True)),
    CheckConstraint("tier in ('free','basic','premium','enterprise')", name="tier"),
    CheckConstraint("retention_days IS NULL OR retention_days > 0", name="retention_days_positive"),
    CheckConstraint("status in ('active','suspended','draining','deleted')", name="status"),
    CheckConstraint(r"tenant_id ~ '^[a-z0-9][a-z0-9_-]{1,31}$'", name="tenant_id_format"),
)

batches = Table(
    "batches",
    metadata,
    Column("correlation_id", String(64), primary_key=True),
    Column("tenant_id", String(32), ForeignKey("tenants.tenant_id"), nullable=False, index=True),
    Column("source_name", Text, nullable=False),
    Column("source_sha256", String(64), nullable=False),
    Column("accepted_count", Integer, nullable=False),
    Column("rejected_count", Integer, nullable=False),
    Column("submitted_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # What the status report repeats and duplicate-file detection compares (migration 0011): the format read,
    # the file's identity (pain.001 GrpHdr/MsgId, else source_sha256) and the totals the file stated.
    Column("source_format", String(32)),
    Column("source_identity", Text),
    Column("stated_count", Integer),
    Column("stated_sum", Numeric),
    Index(None, "tenant_id", "source_identity"),
)

# Control totals stated by the bulk file (or computed from it when it states none), per currency.
batch_totals = Table(
    "batch_totals",
    metadata,
    Column("correlation_id", String(64), ForeignKey("batches.correlation_id"), primary_key=True),
    Column("currency", String(3), primary_key=True),
    Column("tenant_id", String(32), nullable=False),
    Column("accepted_count", Integer, nullable=False),
    Column("accepted_cents", BigInteger, nullable=False),
    Column("control_count", Integer),
    Column("control_cents", BigInteger),
)

batch_rejections = Table(
    "batch_rejections",
    metadata,
    Column("correlation_id", String(64), ForeignKey("batches.correlation_id"), primary_key=True),
    Column("row_number", Integer, primary_key=True),
    Column("tenant_id", String(32), nullable=False),
    Column("payment_reference", Text),
    Column("currency", Text),
    Column("amount_cents", BigInteger),
    Column("errors", JSONB, nullable=False),
    Column("payment_information_id", String(35)),
    Column("instruction_id", String(35)),
    Column("outcome", String(32), nullable=False, server_default="invalid"),  # app/bankfiles/outcomes.py
    Index(None, "correlation_id", "payment_reference"),
)

outbox = Table(
    "outbox",
    metadata,
    Column("outbox_id", BigInteger, Identity(), primary_key=True),
    Column("message_id", UUID(as_uuid=True), nullable=False, unique=True),
    Column("tenant_id", String(32), nullable=False),
    Column("correlation_id", String(64), ForeignKey("batches.correlation_id"), nullable=False, index=True),
    Column("seq", Integer, nullable=False),
    # The payment's line (or transaction position) in its file, as rejected rows carry it; NULL before 0012.
    Column("row_number", Integer),
    Column("payment_reference", String(35), nullable=False),
    Column("amount_cents", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("body", LargeBinary, nullable=False),
    Column("accepted_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("published_at", DateTime(timezone=True)),
    # Where the payment came from, for its status report: its pain.001 references.
    Column("payment_information_id", String(35)),
    Column("instruction_id", String(35)),
    # Refusals by the broker (0018): how many, and the earliest next try (app/publisher/relay.py backs off).
    Column("publish_refusals", Integer, nullable=False, server_default="0"),
    Column("next_publish_at", DateTime(timezone=True)),
    UniqueConstraint("tenant_id", "payment_reference"),
    UniqueConstraint("correlation_id", "seq"),
    UniqueConstraint("correlation_id", "row_number"),
    CheckConstraint("amount_cents > 0", name="amount_positive"),
    Index("ix_outbox_unpublished", "outbox_id", postgresql_where=text("published_at IS NULL")),
    # The relay's fair selection: each tenant's unpublished rows in order (app/publisher/fair_selection.py).
    Index("ix_outbox_unpublished_by_tenant", "tenant_id", "outbox_id", postgresql_where=text("published_at IS NULL")),
)

# The idempotency record. Keyed by (tenant_id, message_id): a message_id is the tenant's own key, so another
# tenant reusing it (by accident or on purpose) is another payment, never a duplicate.
processed_messages = Table(
    "processed_messages",
    metadata,
    Column("message_id", UUID(as_uuid=True), nullable=False),
    Column("tenant_id", String(32), nullable=False),
    Column("correlation_id", String(64), nullable=False, index=True),
    Column("attempt", Integer, nullable=False),
    Column("processed_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # SHA-256 of what the payment moves (app/consumer/digest.py): a used id with other content is a conflict.
    Column("payment_digest", LargeBinary),
    # The external core's id of the transfer (app/consumer/core_banking.py); NULL when the embedded ledger
    # booked it (its ledger row is the transfer).
    Column("core_transfer_id", Text),
    # How the payment came (0016): 'outbox' (a batch) or 'amqp' (published directly, so this record is its only
    # record of acceptance, with what it moved); NULL for records older than 0016.
    Column("source", String(8)),
    Column("amount_cents", BigInteger),
    Column("currency", String(3)),
    # What the external core said of its booking besides its id (0020): its own time of it (its `recorded_at`),
    # and the key generation it was booked under (app/consumer/core_keys.py). NULL for the in-process ledger.
    Column("core_booked_at", DateTime(timezone=True)),
    Column("core_key_generation", Integer),
    PrimaryKeyConstraint("tenant_id", "message_id"),
    CheckConstraint("source IS NULL OR source in ('outbox','amqp')", name="source"),
)

# A new attempt the external core sees as new (0020): each transfer key generation a forced replay opened for a
# tenant's message_id after the core refused the key before it for good (docs/dead-letters.md, "A new attempt at
# the core"). Generation 1, the original key, has no row; the consumer books under the latest.
transfer_key_generations = Table(
    "transfer_key_generations",
    metadata,
    Column("tenant_id", String(32), nullable=False),
    Column("message_id", UUID(as_uuid=True), nullable=False),
    Column("generation", Integer, nullable=False),
    Column("replaces_key", Text, nullable=False),  # the key the core refused for good
    Column("refused_reason", Text),  # the core's reason for it (account_closed, ...)
    Column("opened_at", DateTime(timezone=True), nullable=False, server_default=func.now(), index=True),
    Column("opened_by", Text, nullable=False),
    Column("dead_letter_id", BigInteger),
    Column("request_id", BigInteger),
    PrimaryKeyConstraint("tenant_id", "message_id", "generation"),
    CheckConstraint("generation >= 2", name="generation"),
)

ledger = Table(
    "ledger",
    metadata,
    Column("transfer_id", BigInteger, Identity(), primary_key=True),
    Column("message_id", UUID(as_uuid=True), nullable=False),
    Column("tenant_id", String(32), nullable=False),
    Column("correlation_id", String(64), nullable=False, index=True),
    Column("payment_reference", String(35), nullable=False),
    Column("amount_cents", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("debtor_bsb", String(7), nullable=False),
    Column("debtor_account", String(10), nullable=False),
    Column("creditor_bsb", String(7), nullable=False),
    Column("creditor_account", String(10), nullable=False),
    Column("booked_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    CheckConstraint("amount_cents > 0", name="amount_positive"),
    UniqueConstraint("tenant_id", "message_id"),  # the same key as the idempotency record
)

# Every delivery attempt that did not end in success, written before the message can be lost.
delivery_attempts = Table(
    "delivery_attempts",
    metadata,
    Column("attempt_id", BigInteger, Identity(), primary_key=True),
    Column("message_id", UUID(as_uuid=True), index=True),
    Column("tenant_id", String(32)),
    Column("attempt", Integer, nullable=False),
    Column("outcome", String(32), nullable=False),
    Column("error_type", Text),
    Column("error_message", Text),
    Column("queue", Text),
    Column("at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

dead_letters = Table(
    "dead_letters",
    metadata,
    Column("dead_letter_id", BigInteger, Identity(), primary_key=True),
    Column("dedup_key", Text, nullable=False, unique=True),
    Column("message_id", UUID(as_uuid=True), index=True),
    Column("tenant_id", String(32), index=True),
    Column("correlation_id", String(64), index=True),
    Column("payment_reference", Text),
    Column("amount_cents", BigInteger),
    Column("currency", String(3)),
    Column("reason", String(32), nullable=False, index=True),
    Column("error_type", Text),
    Column("error_message", Text),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("first_failed_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("last_failed_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("original_queue", Text),
    Column("body", LargeBinary, nullable=False),
    Column("headers", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("status", String(24), nullable=False, server_default="open"),
    # The dead letter this one is a replay of (header remit-replay-of), when a replay failed again.
    Column("replay_of", BigInteger),
    # SHA-256 of what its body moves, as processed_messages has it (app/consumer/digest.py); NULL when the body is
    # not a payment. The same payment in its tenant's idempotency record: `already_processed`, not money at risk.
    Column("payment_digest", LargeBinary),
    Column("archived_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("status_changed_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # Identity, not the bytes: who published it (the AMQP user_id RabbitMQ validated), how tenant_id was
    # decided (app/tenancy/identity.py; 'legacy' for rows archived before it was recorded), the tenant the
    # bytes claimed when it differs, and the remit-* headers an untrusted publisher sent (never believed).
    Column("tenant_basis", String(16), nullable=False, server_default="legacy"),
    Column("published_by", Text),
    Column("claimed_tenant", String(32)),
    Column("claims", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("security_event", Boolean, nullable=False, server_default=text("false")),
    # The body is stored as at most a bounded prefix; these describe the whole message.
    Column("body_length", BigInteger, nullable=False),
    Column("body_sha256", String(64), nullable=False),
    Column("body_truncated", Boolean, nullable=False, server_default=text("false")),
    CheckConstraint("status in ('open','replayed','resolved','discarded','already_processed')", name="status"),
    CheckConstraint("tenant_basis in ('trusted','login','routing_key','none','legacy')", name="tenant_basis"),
    Index(None, "last_failed_at"),
    Index(None, "status", "status_changed_at"),
    Index(None, "tenant_id", "payment_reference"),  # `remit trace` by reference, for direct publishes
)

# Who replayed, discarded or resolved which dead letter, when and why. No foreign key on purpose:
# the trail outlives the dead letters that retention purges.
dead_letter_audit = Table(
    "dead_letter_audit",
    metadata,
    Column("audit_id", BigInteger, Identity(), primary_key=True),
    Column("at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("actor", Text, nullable=False),
    Column("action", String(16), nullable=False),
    Column("dead_letter_id", BigInteger, nullable=False, index=True),
    Column("message_id", UUID(as_uuid=True), index=True),
    Column("tenant_id", String(32), index=True),
    Column("why", Text),
    Column("outcome", Text, nullable=False),
    Column("dry_run", Boolean, nullable=False),
    Column("request_id", BigInteger, index=True),  # the replay request it was part of
    CheckConstraint("action in ('replay','discard','resolve','refuse')", name="action"),
)

# Every replay request, single or bulk, refused or not: who asked (the caller), for which dead letters or
# filters, with force or as a dry run, and what came of it. tenant_id is the scope it was made in (a
# tenant key's own tenant, or the tenant an operator narrowed to; NULL: all tenants).
dead_letter_replay_requests = Table(
    "dead_letter_replay_requests",
    metadata,
    Column("request_id", BigInteger, Identity(), primary_key=True),
    Column("at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("actor", Text, nullable=False),
    Column("tenant_id", String(32), index=True),
    Column("dead_letter_ids", JSONB, nullable=False, server_default=text("'[]'::jsonb")),
    Column("filters", JSONB, nullable=False, server_default=text("'{}'::jsonb")),
    Column("everything", Boolean, nullable=False),
    Column("force", Boolean, nullable=False),
    Column("dry_run", Boolean, nullable=False),
    Column("why", Text),
    Column("outcome", Text, nullable=False),
)

# Retention deletes by age in small batches while the service runs; these keep each batch an index scan.
Index("ix_processed_messages_processed_at", processed_messages.c.processed_at)
Index(
    "ix_processed_messages_direct",
    processed_messages.c.processed_at,
    postgresql_where=processed_messages.c.source == "amqp",
)
Index("ix_delivery_attempts_at", delivery_attempts.c.at)

# API keys of the admin HTTP API and the console. Only the SHA-256 of the secret is kept: the secret is
# shown once when the key is made. A tenant key carries its tenant; an admin key has none (it sees all).
api_keys = Table(
    "api_keys",
    metadata,
    Column("key_id", String(24), primary_key=True),
    Column("tenant_id", String(32), ForeignKey("tenants.tenant_id"), index=True),
    Column("role", String(8), nullable=False),
    Column("key_hash", String(64), nullable=False),
    Column("label", Text),
    _now(),
    Column("revoked_at", DateTime(timezone=True)),
    CheckConstraint("role in ('tenant','admin')", name="role"),
    CheckConstraint("(role = 'admin') = (tenant_id IS NULL)", name="tenant_matches_role"),
)

# Tenancy: limits live on `tenants` (columns added by migration 0006); these hold pool control and state.
worker_pools = Table(
    "worker_pools",
    metadata,
    Column("tier", String(16), primary_key=True),
    Column("desired_state", String(16), nullable=False, server_default="running"),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_by", Text),
    CheckConstraint("desired_state in ('running','stopped')", name="desired_state"),
)

worker_heartbeats = Table(
    "worker_heartbeats",
    metadata,
    Column("process_id", Text, primary_key=True),
    Column("pool", Text, primary_key=True),
    Column("tier", String(16), nullable=False),
    Column("queue", Text, nullable=False),
    Column("workers", Integer, nullable=False),
    Column("running", Integer, nullable=False),
    Column("at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("paused_by", Text),  # why the process paused its pools (the core-banking breaker); NULL: not paused
    Column("paused_since", DateTime(timezone=True)),  # since when (0022): the breaker's time of opening
)

rate_buckets = Table(
    "rate_buckets",
    metadata,
    Column("tenant_id", String(32), primary_key=True),
    Column("tokens", Float, nullable=False),
    Column("byte_tokens", Float, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

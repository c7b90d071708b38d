"""SQLAlchemy Core tables for reconciliation runs; alembic 0002_reconciliation creates them."""

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    Integer,
    Interval,
    MetaData,
    String,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import UUID

# Its own MetaData (reconciliation/ does not import app/), with the same naming convention as app's.
metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

reconciliation_runs = Table(
    "reconciliation_runs",
    metadata,
    Column("run_id", UUID(as_uuid=True), primary_key=True),
    Column("as_of", DateTime(timezone=True), nullable=False, index=True),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True), nullable=False),
    Column("grace_minutes", Integer, nullable=False),
    # Input counts: rows per snapshot table, so a run can be compared with the database it read.
    Column("batches_rows", BigInteger, nullable=False),
    Column("batch_totals_rows", BigInteger, nullable=False),
    Column("outbox_rows", BigInteger, nullable=False),
    Column("processed_messages_rows", BigInteger, nullable=False),
    Column("ledger_rows", BigInteger, nullable=False),
    Column("dead_letters_rows", BigInteger, nullable=False),
    # The external core's transfers read (0016); NULL: a run without an external core.
    Column("core_journal_rows", BigInteger),
    Column("message_count", BigInteger, nullable=False),
    Column("break_count", BigInteger, nullable=False),
    Column("pending_batches", Integer, nullable=False),
    Column("broken_batches", Integer, nullable=False),
    Column("result", String(16), nullable=False),
    Column("duration", Interval, nullable=False),
    Column("error", Text),
    CheckConstraint("result in ('RECONCILED','PENDING','BREAKS','FAILED')", name="result"),
)

reconciliation_breaks = Table(
    "reconciliation_breaks",
    metadata,
    Column("break_id", BigInteger, Identity(always=True), primary_key=True),
    Column(
        "run_id",
        UUID(as_uuid=True),
        ForeignKey("reconciliation_runs.run_id", ondelete="CASCADE"),
        nullable=False,
    ),
    # NULL for a batch x currency whose control totals disagree (status control_totals): a break of no message.
    Column("message_id", UUID(as_uuid=True)),
    Column("correlation_id", String(64)),
    Column("tenant_id", String(32), nullable=False),
    Column("currency", String(3)),
    Column("status", String(16), nullable=False),
    Column("amount_cents", BigInteger, nullable=False),
    Column("detail", Text),
    # When a run first saw this break (a message's: tenant_id, message_id; a batch's totals: tenant_id,
    # correlation_id, currency); carried forward while it stays open.
    Column("first_seen_at", DateTime(timezone=True), nullable=False),
    Column("age", Interval, nullable=False),
    CheckConstraint(
        "status in ('core_duplicate','unexpected','mismatch','duplicate','core_only','remit_only','core_mismatch',"
        "'missing','control_totals')",
        name="status",
    ),
    CheckConstraint("(message_id IS NULL) = (status = 'control_totals')", name="totals_have_no_message"),
    # Keyed like the idempotency record: the same message_id of two tenants is two messages.
    Index(
        "uq_reconciliation_breaks_message",
        "run_id",
        "tenant_id",
        "message_id",
        unique=True,
        postgresql_where=text("message_id IS NOT NULL"),
    ),
    Index(
        "uq_reconciliation_breaks_totals",
        "run_id",
        "tenant_id",
        "correlation_id",
        "currency",
        unique=True,
        postgresql_where=text("message_id IS NULL"),
    ),
    Index(None, "message_id", "tenant_id"),
)

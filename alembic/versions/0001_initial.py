"""Initial schema: tenants, batches, outbox, processed_messages, ledger, attempts, dead letters.

Revision ID: 0001_initial
Revises: (none)
Create Date: 2026-11-21 11:42:11.664108
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0001_initial"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "dead_letters",
        sa.Column("dead_letter_id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("dedup_key", sa.Text(), nullable=False),
        sa.Column("message_id", sa.UUID(), nullable=True),
        sa.Column("tenant_id", sa.String(length=32), nullable=True),
        sa.Column("correlation_id", sa.String(length=64), nullable=True),
        sa.Column("payment_reference", sa.Text(), nullable=True),
        sa.Column("amount_cents", sa.BigInteger(), nullable=True),
        sa.Column("currency", sa.String(length=3), nullable=True),
        sa.Column("reason", sa.String(length=32), nullable=False),
        sa.Column("error_type", sa.Text(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column("first_failed_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("last_failed_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("original_queue", sa.Text(), nullable=True),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column(
            "headers",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("status", sa.String(length=16), server_default="open", nullable=False),
        sa.CheckConstraint("status in ('open','replayed','resolved','discarded')", name=op.f("ck_dead_letters_status")),
        sa.PrimaryKeyConstraint("dead_letter_id", name=op.f("pk_dead_letters")),
        sa.UniqueConstraint("dedup_key", name=op.f("uq_dead_letters_dedup_key")),
    )
    op.create_index(op.f("ix_dead_letters_correlation_id"), "dead_letters", ["correlation_id"], unique=False)
    op.create_index(op.f("ix_dead_letters_message_id"), "dead_letters", ["message_id"], unique=False)
    op.create_index(op.f("ix_dead_letters_reason"), "dead_letters", ["reason"], unique=False)
    op.create_index(op.f("ix_dead_letters_tenant_id"), "dead_letters", ["tenant_id"], unique=False)
    op.create_table(
        "delivery_attempts",
        sa.Column("attempt_id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("message_id", sa.UUID(), nullable=True),
        sa.Column("tenant_id", sa.String(length=32), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("outcome", sa.String(length=32), nullable=False),
        sa.Column("error_type", sa.Text(), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("queue", sa.Text(), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("attempt_id", name=op.f("pk_delivery_attempts")),
    )
    op.create_index(op.f("ix_delivery_attempts_message_id"), "delivery_attempts", ["message_id"], unique=False)
    op.create_table(
        "ledger",
        sa.Column("transfer_id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("message_id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("correlation_id", sa.String(length=64), nullable=False),
        sa.Column("payment_reference", sa.String(length=35), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("debtor_bsb", sa.String(length=7), nullable=False),
        sa.Column("debtor_account", sa.String(length=10), nullable=False),
        sa.Column("creditor_bsb", sa.String(length=7), nullable=False),
        sa.Column("creditor_account", sa.String(length=10), nullable=False),
        sa.Column("booked_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("amount_cents > 0", name=op.f("ck_ledger_amount_positive")),
        sa.PrimaryKeyConstraint("transfer_id", name=op.f("pk_ledger")),
        sa.UniqueConstraint("message_id", name=op.f("uq_ledger_message_id")),
    )
    op.create_index(op.f("ix_ledger_correlation_id"), "ledger", ["correlation_id"], unique=False)
    op.create_index(op.f("ix_ledger_tenant_id"), "ledger", ["tenant_id"], unique=False)
    op.create_table(
        "processed_messages",
        sa.Column("message_id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("correlation_id", sa.String(length=64), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("processed_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("message_id", name=op.f("pk_processed_messages")),
    )
    op.create_index(
        op.f("ix_processed_messages_correlation_id"), "processed_messages", ["correlation_id"], unique=False
    )
    op.create_index(op.f("ix_processed_messages_tenant_id"), "processed_messages", ["tenant_id"], unique=False)
    op.create_table(
        "tenants",
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("tier", sa.String(length=16), server_default="basic", nullable=False),
        sa.Column("status", sa.String(length=16), server_default="active", nullable=False),
        sa.Column("default_ttl_seconds", sa.Integer(), server_default="86400", nullable=False),
        sa.Column("max_retries", sa.Integer(), server_default="3", nullable=False),
        sa.Column("max_message_bytes", sa.Integer(), server_default="65536", nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("status in ('active','suspended')", name=op.f("ck_tenants_status")),
        sa.CheckConstraint("tenant_id ~ '^[a-z0-9][a-z0-9_-]{1,31}$'", name=op.f("ck_tenants_tenant_id_format")),
        sa.CheckConstraint("tier in ('free','basic','premium','enterprise')", name=op.f("ck_tenants_tier")),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_tenants")),
    )
    op.create_table(
        "batches",
        sa.Column("correlation_id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("source_name", sa.Text(), nullable=False),
        sa.Column("source_sha256", sa.String(length=64), nullable=False),
        sa.Column("accepted_count", sa.Integer(), nullable=False),
        sa.Column("rejected_count", sa.Integer(), nullable=False),
        sa.Column("submitted_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.tenant_id"], name=op.f("fk_batches_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("correlation_id", name=op.f("pk_batches")),
        sa.UniqueConstraint("tenant_id", "source_sha256", name=op.f("uq_batches_tenant_id_source_sha256")),
    )
    op.create_index(op.f("ix_batches_tenant_id"), "batches", ["tenant_id"], unique=False)
    op.create_table(
        "batch_rejections",
        sa.Column("correlation_id", sa.String(length=64), nullable=False),
        sa.Column("row_number", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("payment_reference", sa.Text(), nullable=True),
        sa.Column("currency", sa.Text(), nullable=True),
        sa.Column("amount_cents", sa.BigInteger(), nullable=True),
        sa.Column("errors", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.ForeignKeyConstraint(
            ["correlation_id"],
            ["batches.correlation_id"],
            name=op.f("fk_batch_rejections_correlation_id_batches"),
        ),
        sa.PrimaryKeyConstraint("correlation_id", "row_number", name=op.f("pk_batch_rejections")),
    )
    op.create_table(
        "batch_totals",
        sa.Column("correlation_id", sa.String(length=64), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("accepted_count", sa.Integer(), nullable=False),
        sa.Column("accepted_cents", sa.BigInteger(), nullable=False),
        sa.Column("control_count", sa.Integer(), nullable=True),
        sa.Column("control_cents", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["correlation_id"],
            ["batches.correlation_id"],
            name=op.f("fk_batch_totals_correlation_id_batches"),
        ),
        sa.PrimaryKeyConstraint("correlation_id", "currency", name=op.f("pk_batch_totals")),
    )
    op.create_table(
        "outbox",
        sa.Column("outbox_id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("message_id", sa.UUID(), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("correlation_id", sa.String(length=64), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("payment_reference", sa.String(length=35), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("accepted_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("amount_cents > 0", name=op.f("ck_outbox_amount_positive")),
        sa.ForeignKeyConstraint(
            ["correlation_id"], ["batches.correlation_id"], name=op.f("fk_outbox_correlation_id_batches")
        ),
        sa.PrimaryKeyConstraint("outbox_id", name=op.f("pk_outbox")),
        sa.UniqueConstraint("correlation_id", "seq", name=op.f("uq_outbox_correlation_id_seq")),
        sa.UniqueConstraint("message_id", name=op.f("uq_outbox_message_id")),
        sa.UniqueConstraint("tenant_id", "payment_reference", name=op.f("uq_outbox_tenant_id_payment_reference")),
    )
    op.create_index(op.f("ix_outbox_correlation_id"), "outbox", ["correlation_id"], unique=False)
    op.create_index(
        "ix_outbox_unpublished",
        "outbox",
        ["outbox_id"],
        unique=False,
        postgresql_where=sa.text("published_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_outbox_unpublished", table_name="outbox", postgresql_where=sa.text("published_at IS NULL"))
    op.drop_index(op.f("ix_outbox_correlation_id"), table_name="outbox")
    op.drop_table("outbox")
    op.drop_table("batch_totals")
    op.drop_table("batch_rejections")
    op.drop_index(op.f("ix_batches_tenant_id"), table_name="batches")
    op.drop_table("batches")
    op.drop_table("tenants")
    op.drop_index(op.f("ix_processed_messages_tenant_id"), table_name="processed_messages")
    op.drop_index(op.f("ix_processed_messages_correlation_id"), table_name="processed_messages")
    op.drop_table("processed_messages")
    op.drop_index(op.f("ix_ledger_tenant_id"), table_name="ledger")
    op.drop_index(op.f("ix_ledger_correlation_id"), table_name="ledger")
    op.drop_table("ledger")
    op.drop_index(op.f("ix_delivery_attempts_message_id"), table_name="delivery_attempts")
    op.drop_table("delivery_attempts")
    op.drop_index(op.f("ix_dead_letters_tenant_id"), table_name="dead_letters")
    op.drop_index(op.f("ix_dead_letters_reason"), table_name="dead_letters")
    op.drop_index(op.f("ix_dead_letters_message_id"), table_name="dead_letters")
    op.drop_index(op.f("ix_dead_letters_correlation_id"), table_name="dead_letters")
    op.drop_table("dead_letters")

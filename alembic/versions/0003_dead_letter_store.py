"""Dead-letter store: review columns, the audit trail, retention indexes, per-tenant retention.

Revision ID: 0003_dead_letter_store
Revises: 0002_reconciliation
Create Date: 2026-11-21 14:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0003_dead_letter_store"
down_revision: str | None = "0002_reconciliation"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("tenants", sa.Column("retention_days", sa.Integer(), nullable=True))
    op.create_check_constraint(
        op.f("ck_tenants_retention_days_positive"), "tenants", "retention_days IS NULL OR retention_days > 0"
    )

    op.add_column("dead_letters", sa.Column("replay_of", sa.BigInteger(), nullable=True))
    op.add_column(
        "dead_letters",
        sa.Column("archived_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
    )
    op.add_column(
        "dead_letters",
        sa.Column("status_changed_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
    )
    op.create_index(op.f("ix_dead_letters_last_failed_at"), "dead_letters", ["last_failed_at"], unique=False)
    op.create_index(
        op.f("ix_dead_letters_status_status_changed_at"), "dead_letters", ["status", "status_changed_at"], unique=False
    )

    op.create_table(
        "dead_letter_audit",
        sa.Column("audit_id", sa.BigInteger(), sa.Identity(always=False), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("dead_letter_id", sa.BigInteger(), nullable=False),
        sa.Column("message_id", sa.UUID(), nullable=True),
        sa.Column("tenant_id", sa.String(length=32), nullable=True),
        sa.Column("why", sa.Text(), nullable=True),
        sa.Column("outcome", sa.Text(), nullable=False),
        sa.Column("dry_run", sa.Boolean(), nullable=False),
        sa.CheckConstraint("action in ('replay','discard','resolve')", name=op.f("ck_dead_letter_audit_action")),
        sa.PrimaryKeyConstraint("audit_id", name=op.f("pk_dead_letter_audit")),
    )
    op.create_index(op.f("ix_dead_letter_audit_dead_letter_id"), "dead_letter_audit", ["dead_letter_id"])
    op.create_index(op.f("ix_dead_letter_audit_message_id"), "dead_letter_audit", ["message_id"])
    op.create_index(op.f("ix_dead_letter_audit_tenant_id"), "dead_letter_audit", ["tenant_id"])

    op.create_index(op.f("ix_processed_messages_processed_at"), "processed_messages", ["processed_at"])
    op.create_index(op.f("ix_delivery_attempts_at"), "delivery_attempts", ["at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_delivery_attempts_at"), table_name="delivery_attempts")
    op.drop_index(op.f("ix_processed_messages_processed_at"), table_name="processed_messages")
    op.drop_index(op.f("ix_dead_letter_audit_tenant_id"), table_name="dead_letter_audit")
    op.drop_index(op.f("ix_dead_letter_audit_message_id"), table_name="dead_letter_audit")
    op.drop_index(op.f("ix_dead_letter_audit_dead_letter_id"), table_name="dead_letter_audit")
    op.drop_table("dead_letter_audit")
    op.drop_index(op.f("ix_dead_letters_status_status_changed_at"), table_name="dead_letters")
    op.drop_index(op.f("ix_dead_letters_last_failed_at"), table_name="dead_letters")
    op.drop_column("dead_letters", "status_changed_at")
    op.drop_column("dead_letters", "archived_at")
    op.drop_column("dead_letters", "replay_of")
    op.drop_constraint(op.f("ck_tenants_retention_days_positive"), "tenants", type_="check")
    op.drop_column("tenants", "retention_days")

"""Reconciliation runs and the breaks each run found.

Revision ID: 0002_reconciliation
Revises: 0001_initial
Create Date: 2026-11-21 12:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0002_reconciliation"
down_revision: str | None = "0001_initial"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "reconciliation_runs",
        sa.Column("run_id", sa.UUID(), nullable=False),
        sa.Column("as_of", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("grace_minutes", sa.Integer(), nullable=False),
        sa.Column("batches_rows", sa.BigInteger(), nullable=False),
        sa.Column("batch_totals_rows", sa.BigInteger(), nullable=False),
        sa.Column("outbox_rows", sa.BigInteger(), nullable=False),
        sa.Column("processed_messages_rows", sa.BigInteger(), nullable=False),
        sa.Column("ledger_rows", sa.BigInteger(), nullable=False),
        sa.Column("dead_letters_rows", sa.BigInteger(), nullable=False),
        sa.Column("message_count", sa.BigInteger(), nullable=False),
        sa.Column("break_count", sa.BigInteger(), nullable=False),
        sa.Column("pending_batches", sa.Integer(), nullable=False),
        sa.Column("broken_batches", sa.Integer(), nullable=False),
        sa.Column("result", sa.String(length=16), nullable=False),
        sa.Column("duration", sa.Interval(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "result in ('RECONCILED','PENDING','BREAKS','FAILED')", name=op.f("ck_reconciliation_runs_result")
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_reconciliation_runs")),
    )
    op.create_index(op.f("ix_reconciliation_runs_as_of"), "reconciliation_runs", ["as_of"], unique=False)
    op.create_table(
        "reconciliation_breaks",
        sa.Column("run_id", sa.UUID(), nullable=False),
        sa.Column("message_id", sa.UUID(), nullable=False),
        sa.Column("correlation_id", sa.String(length=64), nullable=True),
        sa.Column("tenant_id", sa.String(length=32), nullable=True),
        sa.Column("currency", sa.String(length=3), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("first_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("age", sa.Interval(), nullable=False),
        sa.CheckConstraint(
            "status in ('unexpected','mismatch','duplicate','missing')",
            name=op.f("ck_reconciliation_breaks_status"),
        ),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["reconciliation_runs.run_id"],
            name=op.f("fk_reconciliation_breaks_run_id_reconciliation_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("run_id", "message_id", name=op.f("pk_reconciliation_breaks")),
    )
    op.create_index(op.f("ix_reconciliation_breaks_message_id"), "reconciliation_breaks", ["message_id"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_reconciliation_breaks_message_id"), table_name="reconciliation_breaks")
    op.drop_table("reconciliation_breaks")
    op.drop_index(op.f("ix_reconciliation_runs_as_of"), table_name="reconciliation_runs")
    op.drop_table("reconciliation_runs")

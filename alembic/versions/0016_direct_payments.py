"""Direct publishes are first-class payments; reconciliation compares the external core's journal.

A payment published directly over AMQP has no outbox row: its idempotency record, written when it is first
booked, is its only record of acceptance. It now says so (`source` 'amqp'; 'outbox' for a batch's payment)
and keeps what it moved (`amount_cents`, `currency`), so `remit status` counts it and reconciliation
reconciles it as "accepted over AMQP" instead of an `unexpected` ledger row. Records older than this
revision have NULL there (reconciled as before). Who published it is its tenant's own broker user (or a
trusted publisher): the consumer accepts a direct publish from no one else (app/consumer/intake.py).

Three-way reconciliation adds break statuses (core_only, remit_only, core_mismatch) and records how many of
the core's transfers a run read (NULL: a run without an external core).

Revision ID: 0016_direct_payments
Revises: 0014_core_transfer_id
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0016_direct_payments"
# 0015_tenant_lifecycle (another branch) is not in this tree yet: the lead chains this after it.
down_revision: str | None = "0015_tenant_lifecycle"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_OLD_STATUSES = "status in ('unexpected','mismatch','duplicate','missing')"
_NEW_STATUSES = "status in ('unexpected','mismatch','duplicate','core_only','remit_only','core_mismatch','missing')"


def upgrade() -> None:
    op.add_column("processed_messages", sa.Column("source", sa.String(8), nullable=True))
    op.add_column("processed_messages", sa.Column("amount_cents", sa.BigInteger(), nullable=True))
    op.add_column("processed_messages", sa.Column("currency", sa.String(3), nullable=True))
    op.create_check_constraint(
        op.f("ck_processed_messages_source"), "processed_messages", "source IS NULL OR source in ('outbox','amqp')"
    )
    # `remit status` lists the recent direct batches: only the direct records, by time.
    op.create_index(
        "ix_processed_messages_direct",
        "processed_messages",
        ["processed_at"],
        postgresql_where=sa.text("source = 'amqp'"),
    )
    op.drop_constraint(op.f("ck_reconciliation_breaks_status"), "reconciliation_breaks", type_="check")
    op.create_check_constraint(op.f("ck_reconciliation_breaks_status"), "reconciliation_breaks", _NEW_STATUSES)
    op.add_column("reconciliation_runs", sa.Column("core_journal_rows", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    op.drop_column("reconciliation_runs", "core_journal_rows")
    op.execute("DELETE FROM reconciliation_breaks WHERE status in ('core_only','remit_only','core_mismatch')")
    op.drop_constraint(op.f("ck_reconciliation_breaks_status"), "reconciliation_breaks", type_="check")
    op.create_check_constraint(op.f("ck_reconciliation_breaks_status"), "reconciliation_breaks", _OLD_STATUSES)
    op.drop_index("ix_processed_messages_direct", table_name="processed_messages")
    op.drop_constraint(op.f("ck_processed_messages_source"), "processed_messages", type_="check")
    op.drop_column("processed_messages", "currency")
    op.drop_column("processed_messages", "amount_cents")
    op.drop_column("processed_messages", "source")

"""What a batch's status report (pain.002) needs from the file it came from; duplicate files by identity.

batches: the file's format, its identity (pain.001 GrpHdr/MsgId, else the SHA-256 of its bytes) and the
totals it stated (NbOfTxs, CtrlSum), which the report repeats as OrgnlNbOfTxs / OrgnlCtrlSum. Duplicate
files are found by (tenant_id, source_identity) under a transaction-scoped advisory lock, so the unique
constraint on (tenant_id, source_sha256) goes: it made `--allow-resubmit` fail with a unique violation and
two concurrent uploads of one file fail with a 500.

outbox and batch_rejections: for pain.001, each row's
PmtInf/PmtInfId and PmtId/InstrId (the EndToEndId is the payment_reference). batch_rejections also keeps
the outcome a rejection is reported as (duplicate, invalid_account, ...; rows before this revision:
invalid), and is indexed by reference within its batch: the ingest looks up, chunk by chunk, where in the
file a reference was first seen.

Revision ID: 0013_batch_sources
Revises: 0012_outbox_row_number
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0013_batch_sources"
down_revision: str | None = "0012_outbox_row_number"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("batches", sa.Column("source_format", sa.String(length=32), nullable=True))
    op.add_column("batches", sa.Column("source_identity", sa.Text(), nullable=True))
    op.add_column("batches", sa.Column("stated_count", sa.Integer(), nullable=True))
    op.add_column("batches", sa.Column("stated_sum", sa.Numeric(), nullable=True))
    # Nullable: rows written by other means than the ingest (tools, benchmarks) need not name one.
    op.execute("UPDATE batches SET source_identity = source_sha256")
    op.drop_constraint(op.f("uq_batches_tenant_id_source_sha256"), "batches", type_="unique")
    op.create_index(op.f("ix_batches_tenant_id_source_identity"), "batches", ["tenant_id", "source_identity"])
    for table in ("outbox", "batch_rejections"):
        op.add_column(table, sa.Column("payment_information_id", sa.String(length=35), nullable=True))
        op.add_column(table, sa.Column("instruction_id", sa.String(length=35), nullable=True))
    op.add_column(
        "batch_rejections", sa.Column("outcome", sa.String(length=32), server_default="invalid", nullable=False)
    )
    # The ingest asks, chunk by chunk, where in its file a reference was first seen (rejected rows too).
    op.create_index(
        op.f("ix_batch_rejections_correlation_id_payment_reference"),
        "batch_rejections",
        ["correlation_id", "payment_reference"],
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_batch_rejections_correlation_id_payment_reference"), table_name="batch_rejections")
    op.drop_column("batch_rejections", "outcome")
    for table in ("outbox", "batch_rejections"):
        op.drop_column(table, "instruction_id")
        op.drop_column(table, "payment_information_id")
    op.drop_index(op.f("ix_batches_tenant_id_source_identity"), table_name="batches")
    op.create_unique_constraint(op.f("uq_batches_tenant_id_source_sha256"), "batches", ["tenant_id", "source_sha256"])
    for column in ("stated_sum", "stated_count", "source_identity", "source_format"):
        op.drop_column("batches", column)

"""The core's transfer id beside each idempotency record.

An external core banks the transfer in its own system and answers with its own id for it; remit records that
id in the same transaction as the idempotency record, so that each processed payment names the transfer that
moved its money. NULL for payments booked in remit's embedded ledger (the ledger row is the transfer) and for
records older than this revision.

Revision ID: 0014_core_transfer_id
Revises: 0013_batch_sources
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0014_core_transfer_id"
down_revision: str | None = "0013_batch_sources"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("processed_messages", sa.Column("core_transfer_id", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("processed_messages", "core_transfer_id")

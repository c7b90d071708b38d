"""A digest of each processed payment's content beside its idempotency record.

The same (tenant_id, message_id) arriving again is a duplicate only when it is the same payment: a
different payment under a used id would otherwise be acknowledged and silently dropped (a lost payment).
Rows written before this revision have no digest; they keep today's rule (a duplicate, acked).

Revision ID: 0011_payment_digest
Revises: 0010_database_roles
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0011_payment_digest"
down_revision: str | None = "0010_database_roles"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("processed_messages", sa.Column("payment_digest", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    op.drop_column("processed_messages", "payment_digest")

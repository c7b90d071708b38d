"""The relay's fair selection: unpublished outbox rows per tenant, in outbox_id order.

Revision ID: 0007_outbox_fair_index
Revises: 0006_tenant_limits_and_pools
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0007_outbox_fair_index"
down_revision: str | None = "0006_tenant_limits_and_pools"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_outbox_unpublished_by_tenant",
        "outbox",
        ["tenant_id", "outbox_id"],
        postgresql_where=sa.text("published_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_outbox_unpublished_by_tenant", table_name="outbox")

"""Since when a consumer process's pools are paused, beside why (0017).

A consumer pauses every pool while its core-banking circuit breaker is open. Its heartbeat said so (`paused_by`) but
not since when, so the console's Workers page and `remit status` could not tell how long payments have been waiting
on the core. `paused_since` is the breaker's own time of opening (the consumer's clock); NULL when not paused.

Revision ID: 0022_heartbeat_paused_since
Revises: 0021_reconciliation_breaks
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0022_heartbeat_paused_since"
down_revision: str | None = "0021_reconciliation_breaks"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("worker_heartbeats", sa.Column("paused_since", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("worker_heartbeats", "paused_since")

"""Why a consumer process's pools are paused, beside each heartbeat.

A consumer pauses every pool while its core-banking circuit breaker is open (the broker keeps the payments)
and resumes them by itself when the core is ready again. Each heartbeat says so (`paused_by`, NULL when not
paused), so that `remit workers status`, the admin API and the console show it next to the running workers.

Revision ID: 0017_heartbeat_paused_by
Revises: 0016_direct_payments
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0017_heartbeat_paused_by"
down_revision: str | None = "0016_direct_payments"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("worker_heartbeats", sa.Column("paused_by", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("worker_heartbeats", "paused_by")

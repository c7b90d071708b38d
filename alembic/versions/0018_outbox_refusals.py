"""Refused outbox rows wait for their turn instead of holding a place in every relay cycle.

A row the broker refuses (unroutable: its tenant has no binding; or nacked) stays in the outbox and is
retried. Before this revision it was retried every cycle, first in its tenant's order, so once more tenants
than `REMIT_RELAY_BATCH_SIZE` had one, the round-robin's every pick was a refused row and no other tenant's
payment went out. The relay now records each refusal (`publish_refusals`) and the earliest next try
(`next_publish_at`, backing off 1 s doubling to 60 s); the fair selection skips rows not yet due, and
`/readyz` and `remit status` count the refused rows.

Revision ID: 0018_outbox_refusals
Revises: 0017_heartbeat_paused_by
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0018_outbox_refusals"
down_revision: str | None = "0017_heartbeat_paused_by"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("outbox", sa.Column("publish_refusals", sa.Integer(), nullable=False, server_default="0"))
    op.add_column("outbox", sa.Column("next_publish_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("outbox", "next_publish_at")
    op.drop_column("outbox", "publish_refusals")

"""A dead letter of a payment remit has already booked is not money at risk.

The broker can dead-letter a payment after the consumer committed it: its delivery limit reached by a connection
lost between the commit and the ack, or its TTL running out at the head of the queue after a redelivery. Before
this revision such a dead letter was `open`: counted in `remit dlq stats` as value at risk and offered for replay.
Now the archiver records the digest of what its body moves (`payment_digest`, as processed_messages has it) and
files it `already_processed` when its tenant's idempotency record holds the same payment; the value-at-risk
views also leave out an open one whose payment was booked after it was filed.

Revision ID: 0019_already_processed
Revises: 0018_outbox_refusals
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.sql.elements import conv

from alembic import op

revision: str = "0019_already_processed"
down_revision: str | None = "0018_outbox_refusals"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The name as it is, not run through the naming convention (see 0015).
STATUS = conv("ck_dead_letters_status")
OLD = "status in ('open','replayed','resolved','discarded')"
NEW = "status in ('open','replayed','resolved','discarded','already_processed')"


def upgrade() -> None:
    op.add_column("dead_letters", sa.Column("payment_digest", sa.LargeBinary(), nullable=True))
    op.alter_column("dead_letters", "status", type_=sa.String(24), existing_type=sa.String(16))
    op.drop_constraint(STATUS, "dead_letters", type_="check")
    op.create_check_constraint(STATUS, "dead_letters", NEW)


def downgrade() -> None:
    op.execute("UPDATE dead_letters SET status = 'resolved' WHERE status = 'already_processed'")
    op.drop_constraint(STATUS, "dead_letters", type_="check")
    op.create_check_constraint(STATUS, "dead_letters", OLD)
    op.alter_column("dead_letters", "status", type_=sa.String(16), existing_type=sa.String(24))
    op.drop_column("dead_letters", "payment_digest")

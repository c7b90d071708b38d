"""Where a payment came from in its file, and the lookups `remit trace` makes.

`outbox.row_number` is the payment's line (or transaction position) in its bulk file, the number a
support desk quotes with the batch id, and the one rejected rows already carry in `batch_rejections`.
Rows accepted before this revision have none (NULL); they are still found by message_id or reference.
Dead letters get an index by (tenant_id, payment_reference): a payment published directly over AMQP
has no outbox row, and its dead letter is where its reference is found.

Revision ID: 0012_outbox_row_number
Revises: 0011_payment_digest
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0012_outbox_row_number"
down_revision: str | None = "0011_payment_digest"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("outbox", sa.Column("row_number", sa.Integer(), nullable=True))
    op.create_unique_constraint("uq_outbox_correlation_id_row_number", "outbox", ["correlation_id", "row_number"])
    op.create_index("ix_dead_letters_tenant_id_payment_reference", "dead_letters", ["tenant_id", "payment_reference"])


def downgrade() -> None:
    op.drop_index("ix_dead_letters_tenant_id_payment_reference", table_name="dead_letters")
    op.drop_constraint("uq_outbox_correlation_id_row_number", "outbox", type_="unique")
    op.drop_column("outbox", "row_number")

"""A new attempt the core sees as new: transfer key generations, and the core's booking beside the record.

An external core keeps a refusal under its idempotency key for good (docs/core-banking.md, rule 2), so once the
cause is fixed (the account reopened) the same payment needs a key the core has not seen. `transfer_key_generations`
records, beside the tenant's message_id, each new generation a forced replay opened (the key it replaces, why the
core refused that one, who opened it, for which dead letter and request); generation 1 is the original key
`<tenant_id>:<message_id>` and has no row. The consumer books a payment under its latest generation
(`<tenant_id>:<message_id>:<generation>` from 2 on). The message_id, payment_reference and batch stay the
customer's.

processed_messages gains what the core said about the booking besides its transfer id: its own time of it
(`core_booked_at`, the core's `recorded_at`) and the key generation it was booked under (`core_key_generation`),
so that the trace names the core's booking and reconciliation finds it under the key it was booked with. NULL for
payments booked in the in-process ledger and for records older than this revision (generation 1).

Revision ID: 0020_core_key_generations
Revises: 0019_already_processed
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0020_core_key_generations"
down_revision: str | None = "0019_already_processed"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "transfer_key_generations"
# As 0010 made it for every tenant table: a tenant's transaction sees its own rows; the system scope, only for a
# member of remit_system.
VISIBLE = (
    "(current_setting('remit.scope', true) = 'system' "
    "AND (SELECT pg_has_role(current_user, 'remit_system', 'MEMBER'))) "
    "OR (current_setting('remit.scope', true) = 'tenant' AND tenant_id = current_setting('remit.tenant_id', true))"
)


def upgrade() -> None:
    op.add_column("processed_messages", sa.Column("core_booked_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("processed_messages", sa.Column("core_key_generation", sa.Integer(), nullable=True))
    op.create_table(
        TABLE,
        sa.Column("tenant_id", sa.String(32), nullable=False),
        sa.Column("message_id", postgresql.UUID(as_uuid=True), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("replaces_key", sa.Text(), nullable=False),
        sa.Column("refused_reason", sa.Text(), nullable=True),
        sa.Column("opened_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("opened_by", sa.Text(), nullable=False),
        sa.Column("dead_letter_id", sa.BigInteger(), nullable=True),
        sa.Column("request_id", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "message_id", "generation", name=op.f("pk_transfer_key_generations")),
        sa.CheckConstraint("generation >= 2", name=op.f("ck_transfer_key_generations_generation")),
    )
    op.create_index(op.f("ix_transfer_key_generations_opened_at"), TABLE, ["opened_at"])
    op.execute(f"ALTER TABLE {TABLE} ENABLE ROW LEVEL SECURITY")
    op.execute(f"ALTER TABLE {TABLE} FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY tenant_isolation ON {TABLE} USING ({VISIBLE}) WITH CHECK ({VISIBLE})")


def downgrade() -> None:
    op.drop_table(TABLE)
    op.drop_column("processed_messages", "core_key_generation")
    op.drop_column("processed_messages", "core_booked_at")

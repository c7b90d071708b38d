"""Idempotency per tenant: processed_messages, the ledger and reconciliation breaks keyed by
(tenant_id, message_id), so two tenants that use the same message_id are two payments, never one.

Existing rows stay as they are (each already carries its tenant). The new keys lead with tenant_id,
which makes the separate tenant_id indexes redundant. A downgrade fails when two tenants share a
message_id: the old keys cannot hold that data.

Revision ID: 0008_tenant_idempotency
Revises: 0007_outbox_fair_index
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0008_tenant_idempotency"
down_revision: str | None = "0007_outbox_fair_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_constraint("pk_processed_messages", "processed_messages", type_="primary")
    op.create_primary_key("pk_processed_messages", "processed_messages", ["tenant_id", "message_id"])
    op.drop_index("ix_processed_messages_tenant_id", table_name="processed_messages")

    op.drop_constraint("uq_ledger_message_id", "ledger", type_="unique")
    op.create_unique_constraint("uq_ledger_tenant_id_message_id", "ledger", ["tenant_id", "message_id"])
    op.drop_index("ix_ledger_tenant_id", table_name="ledger")

    # A break always belongs to a tenant (its outbox row's, or for an unexpected one its ledger row's).
    op.alter_column("reconciliation_breaks", "tenant_id", nullable=False)
    op.drop_constraint("pk_reconciliation_breaks", "reconciliation_breaks", type_="primary")
    op.create_primary_key("pk_reconciliation_breaks", "reconciliation_breaks", ["run_id", "tenant_id", "message_id"])
    # Serves both the first-seen lookup by (tenant_id, message_id) and an operator's by message_id alone.
    op.drop_index("ix_reconciliation_breaks_message_id", table_name="reconciliation_breaks")
    op.create_index(
        "ix_reconciliation_breaks_message_id_tenant_id", "reconciliation_breaks", ["message_id", "tenant_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_reconciliation_breaks_message_id_tenant_id", table_name="reconciliation_breaks")
    op.create_index("ix_reconciliation_breaks_message_id", "reconciliation_breaks", ["message_id"])
    op.drop_constraint("pk_reconciliation_breaks", "reconciliation_breaks", type_="primary")
    op.create_primary_key("pk_reconciliation_breaks", "reconciliation_breaks", ["run_id", "message_id"])
    op.alter_column("reconciliation_breaks", "tenant_id", nullable=True)

    op.create_index("ix_ledger_tenant_id", "ledger", ["tenant_id"])
    op.drop_constraint("uq_ledger_tenant_id_message_id", "ledger", type_="unique")
    op.create_unique_constraint("uq_ledger_message_id", "ledger", ["message_id"])

    op.create_index("ix_processed_messages_tenant_id", "processed_messages", ["tenant_id"])
    op.drop_constraint("pk_processed_messages", "processed_messages", type_="primary")
    op.create_primary_key("pk_processed_messages", "processed_messages", ["message_id"])

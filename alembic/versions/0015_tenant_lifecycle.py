"""Tenant lifecycle: deletion in two phases, a byte quota, and no per-tenant retry count.

- `status` gains `draining` (phase 1 of `remit tenants delete`: new batches and direct publishes refused,
  what was accepted still completes) and `deleted` (phase 2 done: broker user, binding and dedicated queue
  gone; the records stay until `remit purge` erases them after the retention). `deleted_at` says when.
- `max_bytes_in_flight`: the bytes of payments a tenant may have accepted and not yet settled (the stored-
  bytes quota of reference/001, beside the message-count quota `max_in_flight`). BIGINT: quotas past 2 GiB.
- `max_retries` is dropped: it was never read. Retries are a property of the dependency that failed (the
  core), shared by every tenant through the same delay queues; REMIT_MAX_RETRIES stays the one setting.

Revision ID: 0015_tenant_lifecycle
Revises: 0014_core_transfer_id
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.sql.elements import conv

from alembic import op

revision: str = "0015_tenant_lifecycle"
down_revision: str | None = "0014_core_transfer_id"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The name as it is, not run through the naming convention (what op.f returns; op.f itself needs a running
# migration context, and readiness loads these scripts without one).
STATUS = conv("ck_tenants_status")


def upgrade() -> None:
    op.drop_constraint(STATUS, "tenants", type_="check")
    op.create_check_constraint(STATUS, "tenants", "status in ('active','suspended','draining','deleted')")
    op.add_column("tenants", sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column(
        "tenants", sa.Column("max_bytes_in_flight", sa.BigInteger(), server_default="1073741824", nullable=False)
    )
    op.drop_column("tenants", "max_retries")


def downgrade() -> None:
    op.add_column("tenants", sa.Column("max_retries", sa.Integer(), server_default="3", nullable=False))
    op.drop_column("tenants", "max_bytes_in_flight")
    op.drop_column("tenants", "deleted_at")
    op.execute("UPDATE tenants SET status = 'suspended' WHERE status IN ('draining', 'deleted')")
    op.drop_constraint(STATUS, "tenants", type_="check")
    op.create_check_constraint(STATUS, "tenants", "status in ('active','suspended')")

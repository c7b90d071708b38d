"""Tenant limits (publish rate, bytes, in flight, dedicated queue), worker pool control and heartbeats,
and the per-tenant token buckets.

Revision ID: 0006_tenant_limits_and_pools
Revises: 0005_row_level_security
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0006_tenant_limits_and_pools"
down_revision: str | None = "0005_row_level_security"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

VISIBLE = (
    "current_setting('remit.scope', true) = 'system' "
    "OR (current_setting('remit.scope', true) = 'tenant' AND tenant_id = current_setting('remit.tenant_id', true))"
)


def upgrade() -> None:
    op.add_column("tenants", sa.Column("publish_rate_per_second", sa.Integer(), server_default="1000", nullable=False))
    op.add_column(
        "tenants", sa.Column("publish_bytes_per_second", sa.Integer(), server_default="10000000", nullable=False)
    )
    op.add_column("tenants", sa.Column("max_in_flight", sa.Integer(), server_default="100000", nullable=False))
    op.add_column(
        "tenants", sa.Column("dedicated_queue", sa.Boolean(), server_default=sa.text("false"), nullable=False)
    )
    op.create_table(
        "worker_pools",
        sa.Column("tier", sa.String(length=16), nullable=False),
        sa.Column("desired_state", sa.String(length=16), server_default="running", nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_by", sa.Text(), nullable=True),
        sa.CheckConstraint("desired_state in ('running','stopped')", name=op.f("ck_worker_pools_desired_state")),
        sa.PrimaryKeyConstraint("tier", name=op.f("pk_worker_pools")),
    )
    op.create_table(
        "worker_heartbeats",
        sa.Column("process_id", sa.Text(), nullable=False),
        sa.Column("pool", sa.Text(), nullable=False),
        sa.Column("tier", sa.String(length=16), nullable=False),
        sa.Column("queue", sa.Text(), nullable=False),
        sa.Column("workers", sa.Integer(), nullable=False),
        sa.Column("running", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("process_id", "pool", name=op.f("pk_worker_heartbeats")),
    )
    op.create_table(
        "rate_buckets",
        sa.Column("tenant_id", sa.String(length=32), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("byte_tokens", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_rate_buckets")),
    )
    op.execute("ALTER TABLE rate_buckets ENABLE ROW LEVEL SECURITY")
    op.execute("ALTER TABLE rate_buckets FORCE ROW LEVEL SECURITY")
    op.execute(f"CREATE POLICY tenant_isolation ON rate_buckets USING ({VISIBLE}) WITH CHECK ({VISIBLE})")


def downgrade() -> None:
    op.drop_table("rate_buckets")
    op.drop_table("worker_heartbeats")
    op.drop_table("worker_pools")
    for column in ("dedicated_queue", "max_in_flight", "publish_bytes_per_second", "publish_rate_per_second"):
        op.drop_column("tenants", column)

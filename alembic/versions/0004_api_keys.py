"""API keys of the admin HTTP API and the DLQ console (hashed secrets, tenant or admin role).

Revision ID: 0004_api_keys
Revises: 0003_dead_letter_store
Create Date: 2026-11-22 10:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0004_api_keys"
down_revision: str | None = "0003_dead_letter_store"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("key_id", sa.String(length=24), nullable=False),
        sa.Column("tenant_id", sa.String(length=32), nullable=True),
        sa.Column("role", sa.String(length=8), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("label", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("role in ('tenant','admin')", name=op.f("ck_api_keys_role")),
        sa.CheckConstraint("(role = 'admin') = (tenant_id IS NULL)", name=op.f("ck_api_keys_tenant_matches_role")),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.tenant_id"], name=op.f("fk_api_keys_tenant_id_tenants")),
        sa.PrimaryKeyConstraint("key_id", name=op.f("pk_api_keys")),
    )
    op.create_index(op.f("ix_api_keys_tenant_id"), "api_keys", ["tenant_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_api_keys_tenant_id"), table_name="api_keys")
    op.drop_table("api_keys")

"""Row-level security on every tenant-owned table, and the service role that cannot bypass it.

The service connects as `remit_app`: not a superuser, not the tables' owner, NOBYPASSRLS. Each unit of
work sets `remit.scope` ('tenant' or 'system') and `remit.tenant_id` for its transaction only; a
tenant-scoped transaction sees and writes only that tenant's rows, whatever its SQL says.

Revision ID: 0005_row_level_security
Revises: 0004_api_keys
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0005_row_level_security"
down_revision: str | None = "0004_api_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "remit_app"
TENANT_TABLES = (
    "batches",
    "batch_totals",
    "batch_rejections",
    "outbox",
    "processed_messages",
    "ledger",
    "delivery_attempts",
    "dead_letters",
    "dead_letter_audit",
    "api_keys",
)
VISIBLE = (
    "current_setting('remit.scope', true) = 'system' "
    "OR (current_setting('remit.scope', true) = 'tenant' AND tenant_id = current_setting('remit.tenant_id', true))"
)


def upgrade() -> None:
    # Roles belong to the cluster, not the database: several databases (tests, the demo) share it.
    op.execute(
        f"""
        DO $$ BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') THEN
                CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
            END IF;
        END $$
        """
    )
    op.execute(f"GRANT USAGE ON SCHEMA public TO {APP_ROLE}")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {APP_ROLE}")
    op.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {APP_ROLE}")
    op.execute(
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {APP_ROLE}"
    )
    op.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO {APP_ROLE}")
    for table in TENANT_TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(f"CREATE POLICY tenant_isolation ON {table} USING ({VISIBLE}) WITH CHECK ({VISIBLE})")


def downgrade() -> None:
    for table in TENANT_TABLES:
        op.execute(f"DROP POLICY IF EXISTS tenant_isolation ON {table}")
        op.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    op.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON TABLES FROM {APP_ROLE}")
    op.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON SEQUENCES FROM {APP_ROLE}")
    op.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {APP_ROLE}")
    op.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {APP_ROLE}")
    op.execute(f"REVOKE USAGE ON SCHEMA public FROM {APP_ROLE}")

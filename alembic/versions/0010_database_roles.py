"""Two database roles: `remit_app` can never enter the system scope, `remit_system` can.

Before this, any code connected as `remit_app` could run `set_config('remit.scope', 'system', ...)` and see
every tenant. Now the policies honour the system scope only for a member of `remit_system` (the relay, the
archiver, reconciliation, operators, the consumer's own cross-tenant work). Both roles are NOSUPERUSER and
NOBYPASSRLS and own nothing: the system role is still bound by the policies (a tenant unit of work on it
sees one tenant; a connection that sets no scope sees nothing), which BYPASSRLS would not keep.

Every tenant table, `tenants` included, has the tenant-or-system policy. The tables no tenant-scoped code
needs (`worker_*`, `reconciliation_*`) are simply not granted to `remit_app`: no policy there, because
PostgreSQL refuses COPY FROM into a table with row-level security and reconciliation copies its breaks in.
Nobody but the owner may write `alembic_version`.

Revision ID: 0010_database_roles
Revises: 0007_outbox_fair_index
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0010_database_roles"
down_revision: str | None = "0009_dead_letter_identity"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APP_ROLE = "remit_app"
SYSTEM_ROLE = "remit_system"
TENANT_TABLES = (
    "tenants",
    "batches",
    "batch_totals",
    "batch_rejections",
    "outbox",
    "processed_messages",
    "ledger",
    "delivery_attempts",
    "dead_letters",
    "dead_letter_audit",
    "dead_letter_replay_requests",
    "api_keys",
    "rate_buckets",
)
SYSTEM_TABLES = ("worker_pools", "worker_heartbeats", "reconciliation_runs", "reconciliation_breaks")

# The membership test runs once per statement (an InitPlan), not once per row.
VISIBLE = (
    "(current_setting('remit.scope', true) = 'system' "
    f"AND (SELECT pg_has_role(current_user, '{SYSTEM_ROLE}', 'MEMBER'))) "
    "OR (current_setting('remit.scope', true) = 'tenant' AND tenant_id = current_setting('remit.tenant_id', true))"
)
# What 0005 and 0006 created: any role could choose the system scope.
OLD_VISIBLE = (
    "current_setting('remit.scope', true) = 'system' "
    "OR (current_setting('remit.scope', true) = 'tenant' AND tenant_id = current_setting('remit.tenant_id', true))"
)


def upgrade() -> None:
    _create_system_role()
    _refuse_unsafe_roles()
    op.execute(f"GRANT USAGE ON SCHEMA public TO {SYSTEM_ROLE}")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {SYSTEM_ROLE}")
    op.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {SYSTEM_ROLE}")
    op.execute(
        f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {SYSTEM_ROLE}"
    )
    op.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO {SYSTEM_ROLE}")
    # The readiness check reads the revision; only migrations (the owner) write it.
    op.execute(f"REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON alembic_version FROM {APP_ROLE}, {SYSTEM_ROLE}")
    for table in TENANT_TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        op.execute(f"DROP POLICY IF EXISTS tenant_isolation ON {table}")
        op.execute(f"CREATE POLICY tenant_isolation ON {table} USING ({VISIBLE}) WITH CHECK ({VISIBLE})")
    for table in SYSTEM_TABLES:
        op.execute(f"REVOKE ALL ON {table} FROM {APP_ROLE}")


def _create_system_role() -> None:
    # Roles belong to the cluster: several databases (tests, the demo) migrate at once and share them.
    op.execute(
        f"""
        DO $$ BEGIN
            CREATE ROLE {SYSTEM_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
        END $$
        """
    )


def _refuse_unsafe_roles() -> None:
    """A role made by hand with more power would make the policies meaningless: stop rather than alter a
    cluster-wide role under other databases' feet."""
    op.execute(
        f"""
        DO $$ BEGIN
            IF EXISTS (SELECT FROM pg_roles WHERE rolname IN ('{APP_ROLE}', '{SYSTEM_ROLE}')
                       AND (rolsuper OR rolbypassrls)) THEN
                RAISE EXCEPTION '{APP_ROLE} and {SYSTEM_ROLE} must be NOSUPERUSER NOBYPASSRLS';
            END IF;
            IF pg_has_role('{APP_ROLE}', '{SYSTEM_ROLE}', 'MEMBER') THEN
                RAISE EXCEPTION '{APP_ROLE} must not be a member of {SYSTEM_ROLE}';
            END IF;
        END $$
        """
    )


def downgrade() -> None:
    for table in SYSTEM_TABLES:
        op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {APP_ROLE}")
    for table in TENANT_TABLES:
        op.execute(f"DROP POLICY IF EXISTS tenant_isolation ON {table}")
        if table == "tenants":  # the one tenant table that had no policy before
            op.execute("ALTER TABLE tenants NO FORCE ROW LEVEL SECURITY")
            op.execute("ALTER TABLE tenants DISABLE ROW LEVEL SECURITY")
        else:
            op.execute(f"CREATE POLICY tenant_isolation ON {table} USING ({OLD_VISIBLE}) WITH CHECK ({OLD_VISIBLE})")
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON alembic_version TO {APP_ROLE}")
    # The role stays: it belongs to the cluster, other databases may use it.
    op.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON TABLES FROM {SYSTEM_ROLE}")
    op.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON SEQUENCES FROM {SYSTEM_ROLE}")
    op.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {SYSTEM_ROLE}")
    op.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {SYSTEM_ROLE}")
    op.execute(f"REVOKE USAGE ON SCHEMA public FROM {SYSTEM_ROLE}")

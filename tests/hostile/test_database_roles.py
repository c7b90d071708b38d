"""A hostile caller connected as `remit_app` cannot leave its tenant: the database, not our code, says so.

`remit_app` runs the tenant-scoped code (the consumer's commits, batch ingress, tenant API keys); any code
holding its connection can run `set_config('remit.scope', 'system', ...)` itself. The policies honour the
system scope only for members of `remit_system` (the relay, the archiver, reconciliation, operators), so
that self-escalation sees and writes nothing. The tables come from the metadata: a new table without a
policy, or one that the seed below leaves empty, turns these tests red.
"""

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy.exc
from sqlalchemy import Table, select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.admin.api_keys import create_api_key
from app.admin.caller import Caller
from app.bootstrap import Ports, running_admin
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.resources import build_database
from app.settings import Settings
from app.storage.tables import metadata
from app.storage.unit_of_work import SYSTEM, SqlUnitOfWork, UnitOfWorkFactory
from reconciliation.export import export_snapshot
from reconciliation.tables import metadata as reconciliation_metadata
from tests.utils.services import app_database_url, system_database_url
from tests.utils.world import fresh_tenant, payment_row, write_csv

pytestmark = pytest.mark.integration

TABLES: list[Table] = [*metadata.sorted_tables, *reconciliation_metadata.sorted_tables]
# Shared infrastructure and cross-tenant reports: no tenant-scoped code has any business there, and remit_app
# has no privilege on them at all. Every other table must hold tenant rows under a policy.
SYSTEM_ONLY = {"worker_pools", "worker_heartbeats", "reconciliation_runs", "reconciliation_breaks"}
TENANT_TABLES = [t for t in TABLES if t.name not in SYSTEM_ONLY]
RLS_REFUSED = "row-level security"
NO_PRIVILEGE = "permission denied"


@pytest.fixture(scope="module")
async def two_tenants(uow_factory: UnitOfWorkFactory, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """Two tenants with rows in every table (written as the owner), plus rows in the system-only tables."""
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    tmp = tmp_path_factory.mktemp("roles")
    for tenant in (a, b):
        rows = [payment_row(1), payment_row(2), payment_row(3, amount_cents="-5")]  # the last one is rejected
        await submit_batch(SubmitBatch(tenant, write_csv(tmp / f"{tenant}.csv", rows)), uow_factory, Settings())
        await create_api_key(uow_factory, tenant, "roles test")
    params = {"a": a, "b": b, "run": uuid.uuid4(), "pid": f"{a}-roles-test"}
    async with uow_factory() as uow:
        for statement in _SEED:
            await uow.connection.execute(text(statement), params)
        await uow.commit()
    return a, b


_SEED = (
    "INSERT INTO processed_messages (message_id, tenant_id, correlation_id, attempt) "
    "SELECT message_id, tenant_id, correlation_id, 1 FROM outbox WHERE tenant_id IN (:a, :b)",
    "INSERT INTO ledger (message_id, tenant_id, correlation_id, payment_reference, amount_cents, currency, "
    "debtor_bsb, debtor_account, creditor_bsb, creditor_account) SELECT message_id, tenant_id, correlation_id, "
    "payment_reference, amount_cents, currency, '012-345', '123456789', '033-001', '987654321' FROM outbox "
    "WHERE tenant_id IN (:a, :b)",
    "INSERT INTO delivery_attempts (message_id, tenant_id, attempt, outcome) "
    "SELECT message_id, tenant_id, 1, 'retry' FROM outbox WHERE tenant_id IN (:a, :b)",
    "INSERT INTO dead_letters (dedup_key, message_id, tenant_id, reason, body) "
    "SELECT 'roles-' || message_id, message_id, tenant_id, 'permanent_failure', body FROM outbox "
    "WHERE tenant_id IN (:a, :b)",
    "INSERT INTO dead_letter_audit (actor, action, dead_letter_id, message_id, tenant_id, outcome, dry_run) "
    "SELECT 'roles test', 'discard', dead_letter_id, message_id, tenant_id, 'seeded', false FROM dead_letters "
    "WHERE tenant_id IN (:a, :b)",
    "INSERT INTO dead_letter_replay_requests (actor, tenant_id, everything, force, dry_run, outcome) "
    "SELECT 'roles test', t, false, false, false, 'seeded' FROM unnest(ARRAY[:a, :b]) AS t",
    "INSERT INTO transfer_key_generations (tenant_id, message_id, generation, replaces_key, opened_by) "
    "SELECT tenant_id, message_id, 2, tenant_id || ':' || message_id, 'roles test' FROM outbox "
    "WHERE tenant_id IN (:a, :b)",
    "INSERT INTO rate_buckets (tenant_id, tokens, byte_tokens) VALUES (:a, 1, 1), (:b, 1, 1) "
    "ON CONFLICT (tenant_id) DO NOTHING",
    "INSERT INTO worker_pools (tier, desired_state) VALUES ('free', 'running') ON CONFLICT (tier) DO NOTHING",
    # A day old: no pool status counts it as a live process.
    "INSERT INTO worker_heartbeats (process_id, pool, tier, queue, workers, running, at) "
    "VALUES (:pid, 'free', 'free', 'payments.work.free', 1, 0, now() - interval '1 day')",
    "INSERT INTO reconciliation_runs (run_id, as_of, started_at, finished_at, grace_minutes, batches_rows, "
    "batch_totals_rows, outbox_rows, processed_messages_rows, ledger_rows, dead_letters_rows, message_count, "
    "break_count, pending_batches, broken_batches, result, duration) "
    "VALUES (:run, now(), now(), now(), 15, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 'BREAKS', interval '1 second')",
    "INSERT INTO reconciliation_breaks (run_id, message_id, tenant_id, status, amount_cents, first_seen_at, age) "
    "SELECT :run, message_id, tenant_id, 'missing', amount_cents, now(), interval '0' FROM outbox "
    "WHERE tenant_id IN (:a, :b)",
)


async def _as_system_scope(conn: AsyncConnection) -> None:
    """What a hostile caller does first: claim the system scope for itself (no unit of work needed)."""
    await conn.execute(text("SELECT set_config('remit.scope', 'system', false)"))


async def _count(conn: AsyncConnection, table: Table, tenant: str | None = None) -> int:
    query = f"SELECT count(*) FROM {table.name}"
    if tenant is not None:
        query += " WHERE tenant_id = :tenant"
    return int((await conn.execute(text(query), {"tenant": tenant})).scalar_one())


async def _a_row_of(owner: UnitOfWorkFactory, table: Table, tenant: str) -> dict[str, Any]:
    async with owner() as uow:
        row = (await uow.connection.execute(select(table).where(table.c.tenant_id == tenant).limit(1))).one()
    return dict(row._mapping)


async def test_the_seed_fills_every_table(uow_factory: UnitOfWorkFactory, two_tenants: tuple[str, str]) -> None:
    """Without rows, 'sees nothing' below would prove nothing: a new table needs a row in _SEED."""
    async with uow_factory() as owner:
        for table in TABLES:
            if table.name in SYSTEM_ONLY:
                assert await _count(owner.connection, table) > 0, f"seed a row in {table.name}"
            else:
                for tenant in two_tenants:
                    assert await _count(owner.connection, table, tenant) > 0, f"seed {table.name} for {tenant}"


async def test_every_tenant_table_has_forced_row_level_security_and_a_policy(uow_factory: UnitOfWorkFactory) -> None:
    async with uow_factory() as owner:
        for table in TENANT_TABLES:
            row = (
                await owner.connection.execute(
                    text(
                        "SELECT c.relrowsecurity, c.relforcerowsecurity, "
                        "(SELECT count(*) FROM pg_policies p WHERE p.tablename = c.relname) AS policies "
                        "FROM pg_class c WHERE c.relname = :name AND c.relnamespace = 'public'::regnamespace"
                    ),
                    {"name": table.name},
                )
            ).one()
            assert row.relrowsecurity, f"{table.name}: no row-level security"
            assert row.relforcerowsecurity, f"{table.name}: row-level security is not forced on the owner"
            assert row.policies > 0, f"{table.name} has no policy"


async def test_remit_app_claiming_the_system_scope_sees_no_tenant_row(
    app_engine: AsyncEngine, two_tenants: tuple[str, str]
) -> None:
    async with app_engine.connect() as conn:
        await _as_system_scope(conn)
        seen = {table.name: await _count(conn, table) for table in TENANT_TABLES}
    assert seen == dict.fromkeys(seen, 0)


async def test_remit_app_claiming_the_system_scope_writes_no_tenant_row(
    app_engine: AsyncEngine, uow_factory: UnitOfWorkFactory, two_tenants: tuple[str, str]
) -> None:
    _, b = two_tenants
    changed, inserted = {}, {}
    for table in TENANT_TABLES:
        async with app_engine.connect() as conn:
            await _as_system_scope(conn)
            changed[table.name] = sum(
                [
                    await _rows_reached(conn, f"UPDATE {table.name} SET tenant_id = tenant_id WHERE tenant_id = :b", b),
                    await _rows_reached(conn, f"DELETE FROM {table.name} WHERE tenant_id = :b", b),
                ]
            )
            await conn.rollback()  # should the attack work, the victim's rows stay for the other tests
        inserted[table.name] = await _insert_refusal(app_engine, table, await _a_row_of(uow_factory, table, b))
    assert changed == dict.fromkeys(changed, 0)
    assert inserted == dict.fromkeys(inserted, RLS_REFUSED)


async def _rows_reached(conn: AsyncConnection, statement: str, victim: str) -> int:
    """Rows of the victim's the statement changed; a foreign key refusal means it reached one as well."""
    try:
        async with conn.begin_nested():
            return int((await conn.execute(text(statement), {"b": victim})).rowcount)
    except sqlalchemy.exc.IntegrityError:
        return 1


async def _insert_refusal(app_engine: AsyncEngine, table: Table, row: dict[str, Any]) -> str:
    """Insert a copy of the victim's row (under the victim's tenant) with the system scope claimed; the
    policy's WITH CHECK runs before any unique or foreign key check, so its refusal is what shows."""
    async with app_engine.connect() as conn:
        await _as_system_scope(conn)
        try:
            await conn.execute(table.insert().values(**row))
        except sqlalchemy.exc.DBAPIError as exc:
            return RLS_REFUSED if RLS_REFUSED in str(exc.orig) else type(exc.orig).__name__
        finally:
            await conn.rollback()
    return "inserted"


@pytest.mark.parametrize("table", sorted(SYSTEM_ONLY))
async def test_remit_app_cannot_read_or_write_the_system_only_tables(
    app_engine: AsyncEngine, uow_factory: UnitOfWorkFactory, table: str, two_tenants: tuple[str, str]
) -> None:
    async with uow_factory() as owner:
        granted = text("SELECT has_table_privilege('remit_app', :t, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE')")
        assert (await owner.connection.execute(granted, {"t": table})).scalar_one() is False
    for statement in (f"SELECT count(*) FROM {table}", f"DELETE FROM {table}"):
        async with app_engine.connect() as conn:
            await _as_system_scope(conn)
            with pytest.raises(sqlalchemy.exc.DBAPIError, match=NO_PRIVILEGE):
                await conn.execute(text(statement))


async def test_remit_app_cannot_become_remit_system_or_switch_row_security_off(app_engine: AsyncEngine) -> None:
    async with app_engine.connect() as conn:
        assert (await conn.execute(text("SELECT pg_has_role('remit_system', 'MEMBER')"))).scalar_one() is False
    for escape in ("SET ROLE remit_system", "SET SESSION AUTHORIZATION remit_system"):
        async with app_engine.connect() as conn:
            with pytest.raises(sqlalchemy.exc.DBAPIError, match=NO_PRIVILEGE):
                await conn.execute(text(escape))
    async with app_engine.connect() as conn:
        await _as_system_scope(conn)
        await conn.execute(text("SET row_security = off"))
        with pytest.raises(sqlalchemy.exc.DBAPIError, match=RLS_REFUSED):
            await conn.execute(text("SELECT count(*) FROM ledger"))


async def test_neither_role_is_superuser_bypasses_row_security_or_owns_a_table(uow_factory: UnitOfWorkFactory) -> None:
    async with uow_factory() as owner:
        roles = (
            await owner.connection.execute(
                text(
                    "SELECT rolname, rolsuper, rolbypassrls, rolcreaterole, rolcreatedb FROM pg_roles "
                    "WHERE rolname IN ('remit_app', 'remit_system') ORDER BY rolname"
                )
            )
        ).all()
        assert [tuple(r) for r in roles] == [
            ("remit_app", False, False, False, False),
            ("remit_system", False, False, False, False),
        ]
        owned = await owner.connection.execute(
            text("SELECT tablename FROM pg_tables WHERE tableowner IN ('remit_app', 'remit_system')")
        )
        assert owned.scalars().all() == []


async def test_remit_system_in_the_system_scope_sees_every_tenant_and_the_system_tables(
    system_engine: AsyncEngine, two_tenants: tuple[str, str]
) -> None:
    async with SqlUnitOfWork(system_engine) as uow:
        for table in TABLES:
            if table.name in SYSTEM_ONLY:
                assert await _count(uow.connection, table) > 0, table.name
            else:
                for tenant in two_tenants:
                    assert await _count(uow.connection, table, tenant) > 0, (table.name, tenant)


async def test_a_tenant_unit_of_work_on_remit_system_still_sees_only_its_tenant(
    system_engine: AsyncEngine, two_tenants: tuple[str, str]
) -> None:
    a, _ = two_tenants
    async with SqlUnitOfWork(system_engine, a) as uow:
        for table in TENANT_TABLES:
            seen = await uow.connection.execute(text(f"SELECT DISTINCT tenant_id FROM {table.name}"))
            assert seen.scalars().all() == [a], table.name


async def test_reconciliation_refuses_to_export_as_a_role_that_would_see_no_row(
    database_url: str, tmp_path: Path, two_tenants: tuple[str, str]
) -> None:
    """An empty snapshot reconciles cleanly: exporting as remit_app must fail loudly, not report nothing."""
    with pytest.raises(PermissionError, match="remit_app"):
        await export_snapshot(app_database_url(database_url), datetime.now(UTC), tmp_path / "as-app")
    counts = await export_snapshot(system_database_url(database_url), datetime.now(UTC), tmp_path / "as-system")
    assert counts["outbox"] >= 4  # both tenants' rows at least


async def _role(uow: UnitOfWorkFactory, tenant_id: str | None) -> str:
    async with uow(tenant_id) as u:
        return str((await u.connection.execute(text("SELECT current_user"))).scalar_one())


async def test_the_service_runs_tenant_work_as_remit_app_and_system_work_as_remit_system(settings: Settings) -> None:
    database = build_database(settings, pool_size=1)
    try:
        assert (await _role(database.uow, "acme"), await _role(database.uow, SYSTEM)) == ("remit_app", "remit_system")
    finally:
        await database.dispose()


async def test_the_admin_api_runs_a_tenant_key_as_remit_app_and_an_admin_key_as_remit_system(
    settings: Settings,
) -> None:
    async with running_admin(settings, Ports()) as services:
        tenant, admin = Caller("k1", "acme"), Caller("k2", None)
        assert await _role(services.uow(tenant), SYSTEM) == "remit_app"  # asking for more changes nothing
        assert await _role(services.uow(admin), SYSTEM) == "remit_system"

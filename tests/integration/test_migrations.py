"""alembic owns the schema and app/storage/tables.py mirrors it: after `upgrade head` they must agree."""

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import asyncpg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import MetaData, inspect
from sqlalchemy.engine import Connection

from alembic import command
from app.storage.engine import make_engine
from app.storage.migrations import alembic_config, upgrade_to_head
from app.storage.tables import metadata
from reconciliation.config import libpq_dsn
from reconciliation.tables import metadata as reconciliation_metadata
from tests.utils.services import create_database, drop_database

pytestmark = pytest.mark.integration
T = TypeVar("T")


@pytest.fixture
async def migrated_url() -> AsyncIterator[str]:
    url = await create_database()
    await upgrade_to_head(url)
    yield url
    await drop_database(url)


def _schema() -> MetaData:
    """The service's tables and the reconciliation job's own (it keeps its MetaData apart from app/)."""
    combined = MetaData()
    for source in (metadata, reconciliation_metadata):
        for table in source.tables.values():
            table.to_metadata(combined)
    return combined


def _diff(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_type": True, "compare_server_default": True})
    return list(compare_metadata(context, _schema()))


async def _inspect(url: str, inspection: Callable[[Connection], T]) -> T:
    engine = make_engine(url, pool_size=1)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(inspection)
    finally:
        await engine.dispose()


async def test_upgrade_head_leaves_no_difference_from_the_tables_module(migrated_url: str) -> None:
    diff = await _inspect(migrated_url, _diff)
    drift = "\n".join(_describe(d) for d in diff)
    assert not diff, f"alembic head and app/storage/tables.py differ (mirror the migration in tables.py):\n{drift}"


def _describe(change: Any) -> str:
    # compare_metadata yields tuples (op, object, ...) or, for column changes, lists of such tuples.
    first = change[0] if isinstance(change, list) else change
    what = first[1]
    name = getattr(what, "name", what)
    table = getattr(getattr(what, "table", None), "name", "")
    return f"  {first[0]} {table + '.' if table else ''}{name}"


def _primary_keys(connection: Connection) -> dict[str, list[str]]:
    inspector = inspect(connection)
    return {t: inspector.get_pk_constraint(t)["constrained_columns"] for t in inspector.get_table_names()}


async def test_primary_keys_agree_with_the_tables_module(migrated_url: str) -> None:
    """autogenerate does not compare primary keys: compared here, column order included."""
    keys = await _inspect(migrated_url, _primary_keys)
    expected = {t.name: [c.name for c in t.primary_key.columns] for t in _schema().tables.values()}
    assert {t: keys[t] for t in expected} == expected


TENANT_IDEMPOTENCY = "0008_tenant_idempotency"
_SEED = [
    "INSERT INTO tenants (tenant_id, name) VALUES ('acme', 'Acme'), ('zeta', 'Zeta')",
    "INSERT INTO processed_messages (message_id, tenant_id, correlation_id, attempt) "
    "VALUES ('00000000-0000-4000-8000-000000000001', 'acme', 'b1', 1)",
    "INSERT INTO ledger (message_id, tenant_id, correlation_id, payment_reference, amount_cents, currency, "
    "debtor_bsb, debtor_account, creditor_bsb, creditor_account) VALUES ('00000000-0000-4000-8000-000000000001', "
    "'acme', 'b1', 'REF-1', 1000, 'AUD', '012-345', '123456789', '033-001', '987654321')",
]


async def test_tenant_idempotency_keeps_existing_rows_and_lets_two_tenants_share_a_message_id() -> None:
    url = await create_database()
    try:
        config = alembic_config(url)
        await asyncio.to_thread(command.upgrade, config, f"{TENANT_IDEMPOTENCY}-1")
        owner = await asyncpg.connect(libpq_dsn(url))
        try:
            for statement in _SEED:
                await owner.execute(statement)
            await asyncio.to_thread(command.upgrade, config, "head")
            assert await owner.fetchval("SELECT count(*) FROM processed_messages WHERE tenant_id = 'acme'") == 1
            assert await owner.fetchval("SELECT count(*) FROM ledger WHERE tenant_id = 'acme'") == 1
            for statement in _SEED[1:]:  # the same message_id, now for the other tenant: allowed
                await owner.execute(statement.replace("'acme'", "'zeta'"))
            with pytest.raises(asyncpg.UniqueViolationError):  # the same tenant again: refused, as before
                await owner.execute(_SEED[2])
            with pytest.raises(asyncpg.UniqueViolationError):
                await owner.execute(_SEED[1])
        finally:
            await owner.close()
    finally:
        await drop_database(url)

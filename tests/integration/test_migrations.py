"""alembic owns the schema and app/storage/tables.py mirrors it: after `upgrade head` they must agree."""

from collections.abc import AsyncIterator
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import MetaData
from sqlalchemy.engine import Connection

from app.storage.engine import make_engine
from app.storage.migrations import upgrade_to_head
from app.storage.tables import metadata
from reconciliation.tables import metadata as reconciliation_metadata
from tests.utils.services import create_database, drop_database

pytestmark = pytest.mark.integration


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


async def test_upgrade_head_leaves_no_difference_from_the_tables_module(migrated_url: str) -> None:
    engine = make_engine(migrated_url, pool_size=1)
    try:
        async with engine.connect() as conn:
            diff = await conn.run_sync(_diff)
    finally:
        await engine.dispose()
    drift = "\n".join(_describe(d) for d in diff)
    assert not diff, f"alembic head and app/storage/tables.py differ (mirror the migration in tables.py):\n{drift}"


def _describe(change: Any) -> str:
    # compare_metadata yields tuples (op, object, ...) or, for column changes, lists of such tuples.
    first = change[0] if isinstance(change, list) else change
    what = first[1]
    name = getattr(what, "name", what)
    table = getattr(getattr(what, "table", None), "name", "")
    return f"  {first[0]} {table + '.' if table else ''}{name}"

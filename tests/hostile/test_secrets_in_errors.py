"""A failed statement's error says what failed, never with which values: its text reaches log lines,
`delivery_attempts.error_message` and the `remit-error` header. (The whole path, from a refused commit
to those three places, is tests/hostile/test_poison_row.py.)"""

import pytest
from asyncpg import PostgresError
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from app.storage.db_errors import describe, row_refused
from app.storage.driver import driver_of
from app.storage.engine import make_engine

pytestmark = pytest.mark.integration

ACCOUNT = "123456789"


async def test_the_services_engine_does_not_quote_a_failed_statements_parameters(database_url: str) -> None:
    engine = make_engine(database_url, pool_size=1)
    try:
        async with engine.connect() as conn:
            with pytest.raises(DBAPIError) as caught:
                await conn.execute(text("SELECT length(CAST(:account AS text)) / 0"), {"account": ACCOUNT})
    finally:
        await engine.dispose()
    assert ACCOUNT not in str(caught.value)
    assert "parameters hidden" in str(caught.value)
    assert describe(caught.value) == "DBAPIError (DivisionByZeroError, SQLSTATE 22012)"
    assert row_refused(caught.value)


async def test_the_drivers_own_error_is_described_by_kind_sqlstate_and_constraint_alone(database_url: str) -> None:
    """The group commit's inserts run on asyncpg's connection (app/storage/driver.py): its errors carry
    PostgreSQL's DETAIL, which quotes the row's values; `describe` must name only what failed."""
    engine = make_engine(database_url, pool_size=1)
    try:
        async with engine.connect() as conn:
            driver = await driver_of(conn)
            await driver.execute("CREATE TEMP TABLE accounts (account text CONSTRAINT uq_account UNIQUE)")
            insert = "INSERT INTO accounts SELECT * FROM unnest($1::text[])"
            with pytest.raises(PostgresError) as refused:
                await driver.execute(insert, [ACCOUNT, ACCOUNT])
    finally:
        await engine.dispose()
    assert ACCOUNT in refused.value.detail  # what the driver carries ...
    assert describe(refused.value) == "UniqueViolationError (SQLSTATE 23505, constraint uq_account)"  # ... and says
    assert row_refused(refused.value)

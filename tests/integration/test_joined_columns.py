"""The group commit sends each column as one joined text parameter (app/storage/driver.py): what PostgreSQL
splits back is exactly what was sent, value for value, and a value that could shift the columns (one holding
the separator, or an empty one) is refused before anything is sent."""

from uuid import uuid4

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.storage.driver import SEPARATOR, driver_of, joined, split

pytestmark = pytest.mark.integration

TEXTS = ["PAY-1", "a,b", "quote'd", 'dq"x', "{braces}", "NULL", "sp ace", "ünï", "back\\slash", "x" * 300]


async def test_what_postgresql_splits_is_what_was_sent(engine: AsyncEngine) -> None:
    ids, amounts = [uuid4() for _ in TEXTS], [1, 99, 100_000_000_000_000, 7, 0, 5, 6, 8, 9, 10]
    query = f"SELECT * FROM unnest({split(1, 'uuid')}, {split(2, 'bigint')}, {split(3, 'varchar')})"
    async with engine.connect() as conn:
        driver = await driver_of(conn)
        rows = await driver.fetch(query, joined(ids), joined(amounts), joined(TEXTS))
    assert [tuple(row) for row in rows] == list(zip(ids, amounts, TEXTS, strict=True))


@pytest.mark.parametrize("bad", [f"a{SEPARATOR}b", ""])
def test_a_value_that_would_shift_the_columns_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="separator"):
        joined(["ok", bad, "ok"])


async def test_an_empty_column_is_an_empty_array(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        driver = await driver_of(conn)
        assert await driver.fetchval(f"SELECT cardinality({split(1, 'uuid')})", joined([])) == 0

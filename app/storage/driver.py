"""asyncpg's own connection under a unit of work's, for the statements on the hot path.

SQLAlchemy's statement handling (bind processors run per array element, result rows built per row) cost more
CPU than PostgreSQL's own work for the group commit's array inserts (docs/benchmarks.md, "Consumer"); the
driver's connection runs them in the same transaction, with asyncpg's own prepared-statement cache.
"""

from collections.abc import Iterable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection


async def driver_of(connection: AsyncConnection) -> Any:
    """The asyncpg connection under `connection`, inside the transaction the unit of work began."""
    driver = (await connection.get_raw_connection()).driver_connection
    assert driver is not None, "the unit of work's connection is open"
    return driver


# A column of values sent as one text parameter and split by PostgreSQL: asyncpg encodes a list parameter
# element by element, with two abstract-class checks per element (whether it is itself a nested array), which
# cost the consumer more than its SQL (docs/benchmarks.md, "Consumer"). The unit separator cannot occur in the
# contract's fields (their patterns exclude it), and `joined` checks that it did not.
SEPARATOR = "\x1f"


def split(parameter: int, pg_type: str) -> str:
    """SQL for parameter $n, a `joined` column, as an array of `pg_type`."""
    return f"string_to_array(${parameter}, chr(31))::{pg_type}[]"


def joined(values: Iterable[object]) -> str:
    """One column's values as one text parameter for `split`."""
    items = [str(value) for value in values]
    text = SEPARATOR.join(items)
    if items and (text.count(SEPARATOR) != len(items) - 1 or "" in items):
        raise ValueError("a value holds the column separator, or is empty: it cannot be sent as a joined column")
    return text

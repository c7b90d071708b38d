"""asyncpg's own connection under a unit of work's, for the statements on the hot path.

SQLAlchemy's statement handling (bind processors run per array element, result rows built per row) cost more
CPU than PostgreSQL's own work for the group commit's array inserts (docs/benchmarks.md, "Consumer"); the
driver's connection runs them in the same transaction, with asyncpg's own prepared-statement cache.
"""

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection


async def driver_of(connection: AsyncConnection) -> Any:
    """The asyncpg connection under `connection`, inside the transaction the unit of work began."""
    driver = (await connection.get_raw_connection()).driver_connection
    assert driver is not None, "the unit of work's connection is open"
    return driver

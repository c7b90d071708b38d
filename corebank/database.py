"""The core's database from the outside: create it, migrate it, and check it before serving."""

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from corebank.errors import DatabaseNotReady
from corebank.migrations import current_revision, head_revision, upgrade_to_head

log = logging.getLogger("corebank")


def _dsn(database_url: str, database: str | None = None) -> str:
    url = make_url(database_url).set(drivername="postgresql")
    return (url.set(database=database) if database else url).render_as_string(hide_password=False)


def _where(database_url: str) -> str:
    return make_url(database_url).render_as_string(hide_password=True)


async def create_if_missing(database_url: str) -> bool:
    """Create the database (connecting to `postgres` on the same server); True when it was created."""
    name = make_url(database_url).database
    admin = await asyncpg.connect(_dsn(database_url, "postgres"))
    try:
        if await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name):
            return False
        await admin.execute(f'CREATE DATABASE "{name}"')
        return True
    finally:
        await admin.close()


@asynccontextmanager
async def _explained(database_url: str) -> AsyncIterator[None]:
    """A missing or unreachable database becomes one line with the fix, not a traceback."""
    try:
        yield
    except asyncpg.InvalidCatalogNameError:
        fix = "run `python -m corebank db upgrade --create`"
        raise DatabaseNotReady(f"{_where(database_url)} does not exist: {fix}") from None
    except OSError as exc:
        raise DatabaseNotReady(
            f"PostgreSQL at {_where(database_url)} is not reachable ({type(exc).__name__})"
        ) from None


async def upgrade(database_url: str, create: bool) -> str:
    """Migrate to head (creating the database first if asked); return what was done, in one line."""
    async with _explained(database_url):
        created = create and await create_if_missing(database_url)
        await upgrade_to_head(database_url)
    return f"{'created and ' if created else ''}migrated {_where(database_url)} to {head_revision()}"


# Seen on a server with autovacuum off (docs/benchmarks.md, "External core"): `transfers` was never analyzed, the
# idempotency look-up kept the sequential-scan plan cached while the table was empty, and every request got
# slower as the table grew (118 ms per look-up of 128 keys at 60,000 transfers, 0.4 ms once analyzed).
NO_AUTOVACUUM = (
    "autovacuum is off on this PostgreSQL server: the core's tables are never analyzed, and its look-ups slow "
    "down as they grow. Turn autovacuum on, or run VACUUM ANALYZE on the core's database regularly."
)


async def _autovacuum(conn: AsyncConnection) -> bool:
    return bool((await conn.execute(text("SHOW autovacuum"))).scalar_one() == "on")


async def check_at_head(database_url: str) -> str:
    """The head revision, or DatabaseNotReady with the one-line fix; warns when the server runs no autovacuum."""
    engine = create_async_engine(database_url, pool_size=1)
    try:
        async with _explained(database_url), engine.connect() as conn:
            current = await current_revision(conn)
            autovacuum = await _autovacuum(conn)
    finally:
        await engine.dispose()
    if current is None or current != head_revision():
        raise DatabaseNotReady(
            f"{_where(database_url)} is at schema revision {current or 'none'}, this code needs {head_revision()}: "
            "run `python -m corebank db upgrade`"
        )
    if not autovacuum:
        log.warning(NO_AUTOVACUUM)
    return current

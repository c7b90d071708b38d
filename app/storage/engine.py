"""Engine construction and database readiness (used by the prestart step and the service)."""

import time
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_delay, wait_exponential

from app.errors import ServiceUnavailable

# A pooled connection idle this long is pinged on checkout; a busier one is only checked locally (see below).
PING_AFTER_IDLE_SECONDS = 10.0
_IDLE_SINCE = "remit_idle_since"


def make_engine(database_url: str, pool_size: int = 10) -> AsyncEngine:
    # hide_parameters: a statement's error text would otherwise quote its parameters (account numbers).
    engine = create_async_engine(database_url, pool_size=pool_size, max_overflow=pool_size, hide_parameters=True)
    event.listen(engine.sync_engine.pool, "checkin", _mark_idle)
    event.listen(engine.sync_engine.pool, "checkout", _check_alive)
    return engine


def _mark_idle(dbapi_connection: DBAPIConnection | None, record: ConnectionPoolEntry) -> None:
    record.info[_IDLE_SINCE] = time.monotonic()


def _check_alive(dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry, proxy: Any) -> None:
    """SQLAlchemy's pool_pre_ping costs three round trips per checkout on asyncpg (BEGIN, a query, ROLLBACK):
    one unit of work per group commit paid them, and PostgreSQL's share of them, on every batch
    (docs/benchmarks.md, "Latency"). A connection the server closed (a restart, pg_terminate_backend) is
    known to asyncpg as soon as its socket reads the end, so that check is local; only a connection idle long
    enough for a silent loss (a firewall's idle timeout, a host gone without a FIN) still gets the ping.
    DisconnectionError makes the pool discard the connection and check out another one."""
    driver = dbapi_connection.driver_connection
    if driver.is_closed():
        raise DisconnectionError("the server closed this pooled connection")
    idle_since = record.info.get(_IDLE_SINCE)
    if idle_since is not None and time.monotonic() - idle_since > PING_AFTER_IDLE_SECONDS:
        try:
            dbapi_connection.ping()
        except Exception as error:
            raise DisconnectionError(f"a pooled connection idle for long did not answer: {error}") from error


async def wait_for_database(engine: AsyncEngine, timeout_seconds: float = 30.0) -> None:
    """Block until PostgreSQL answers, or raise ServiceUnavailable with the URL's host in the message."""
    try:
        async for attempt in AsyncRetrying(
            stop=stop_after_delay(timeout_seconds),
            wait=wait_exponential(multiplier=0.2, max=2.0),
            retry=retry_if_exception_type(OSError) | retry_if_exception_type(Exception),
            reraise=True,
        ):
            with attempt:
                async with engine.connect() as conn:
                    await conn.exec_driver_sql("SELECT 1")
    except Exception as exc:
        raise ServiceUnavailable(
            f"PostgreSQL at {engine.url.render_as_string(hide_password=True)} is not reachable: {exc}"
        ) from exc

"""The engine's pool on the real server, without SQLAlchemy's pool_pre_ping (app/storage/engine.py): a
connection the server closed is replaced at checkout, without an error and without a round trip; only a
connection idle for longer than PING_AFTER_IDLE_SECONDS is pinged first."""

from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.storage import engine as engine_module
from app.storage.engine import make_engine
from tests.utils.services import eventually

pytestmark = pytest.mark.integration


@pytest.fixture
async def one_connection(database_url: str) -> AsyncIterator[AsyncEngine]:
    """A pool of exactly one connection, so every checkout gets the same one while it lives."""
    engine = make_engine(database_url, pool_size=1)
    engine.sync_engine.pool._max_overflow = 0  # type: ignore[attr-defined]
    yield engine
    await engine.dispose()


async def _pid(conn: AsyncConnection) -> int:
    return int((await conn.exec_driver_sql("SELECT pg_backend_pid()")).scalar_one())


async def _backend_pid(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return await _pid(conn)


async def test_a_connection_the_server_closed_is_replaced_at_checkout(
    one_connection: AsyncEngine, engine: AsyncEngine
) -> None:
    async with one_connection.connect() as conn:
        first = await _pid(conn)
        driver = (await conn.get_raw_connection()).driver_connection
        assert driver is not None
    async with engine.connect() as other:
        assert (await other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": first})).scalar_one()

    async def closed() -> bool:
        return bool(driver.is_closed())

    await eventually(closed, timeout=10, poll=0.02)  # the pooled connection has read the end of its socket
    second = await _backend_pid(one_connection)  # no error: the closed one was discarded, not used
    assert second != first
    assert await _backend_pid(one_connection) == second, "a live connection is kept"


async def test_only_a_connection_idle_for_long_is_pinged(
    one_connection: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[str] = []

    def record(query: Any) -> None:
        sent.append(query.query)

    async with one_connection.connect() as conn:
        driver = (await conn.get_raw_connection()).driver_connection
        assert driver is not None
        driver.add_query_logger(record)
    await _backend_pid(one_connection)
    assert sent, "the query logger saw nothing: the test would prove nothing"
    assert ";" not in sent, f"a connection used a moment ago was pinged: {sent}"

    sent.clear()
    monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_SECONDS", 0.0)
    await _backend_pid(one_connection)
    assert sent[:3] == ["BEGIN;", ";", "ROLLBACK;"], f"an idle connection was not pinged first: {sent}"

"""The routes' way into the database: a connection that could not be had is a 503, whatever the driver raised.

Nothing has started when connecting fails, so "unavailable, try again" is always true then. A failure later,
inside a statement or the commit, is left to the error handlers (errors.py): for a booking its outcome may
be unknown, which the 503's description says.
"""

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from corebank.errors import Unavailable

log = logging.getLogger("corebank")


class Database:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[AsyncConnection]:
        conn = self.engine.connect()
        try:
            await conn.start()
        except Exception as exc:  # asyncpg raises its own classes at connect time, unwrapped
            log.error("cannot connect to the database: %s", type(exc).__name__)
            raise Unavailable("the core's database is unreachable; try again later") from None
        try:
            yield conn
        finally:
            await conn.close()

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[AsyncConnection]:
        async with self.connect() as conn, conn.begin():
            yield conn

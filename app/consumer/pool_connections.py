"""A connection of its own for each worker pool: the bulkhead between tiers (docs/architecture.md, "Bulkheads").

A connection is the unit AMQP fails in: when one closes, every delivery unacked on it goes back to its queue
with its delivery count raised. Pools that share one share that fate; with one connection each, whatever closes
a pool's connection (a broker-side channel error, a decoder fault, a forced close) reaches only the tenants of
that pool's queue. The consumer's own publishing (retries, dead letters) keeps the process's main connection.
"""

import asyncio
import contextlib

from aio_pika.abc import AbstractRobustConnection

from app.messaging.connection import connect


class PoolConnections:
    def __init__(self, amqp_url: str, process_name: str) -> None:
        self._amqp_url = amqp_url
        self._process_name = process_name
        self._open: dict[str, AbstractRobustConnection] = {}
        self._opening = asyncio.Lock()

    async def of(self, pool: str) -> AbstractRobustConnection:
        """The pool's connection, opened the first time it is asked for (named after the pool on the broker)."""
        async with self._opening:
            if pool not in self._open:
                self._open[pool] = await connect(self._amqp_url, f"{self._process_name} {pool}")
            return self._open[pool]

    async def close(self, pool: str) -> None:
        connection = self._open.pop(pool, None)
        if connection is not None:
            with contextlib.suppress(Exception):  # closing what is gone already
                await connection.close()

    async def close_all(self) -> None:
        await asyncio.gather(*(self.close(pool) for pool in list(self._open)))

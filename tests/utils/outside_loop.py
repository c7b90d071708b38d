"""Seeding for CLI tests: each CLI command runs its own event loop, so the seed runs in one of its own too."""

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from app.resources import uow_factory_for
from app.storage.engine import make_engine
from app.storage.unit_of_work import UnitOfWorkFactory

T = TypeVar("T")


def seeded(database_url: str, seed: Callable[[UnitOfWorkFactory], Awaitable[T]]) -> T:
    async def run() -> T:
        engine = make_engine(database_url, pool_size=1)
        try:
            return await seed(uow_factory_for(engine))
        finally:
            await engine.dispose()

    return asyncio.run(run())

"""A unit of work over one PostgreSQL transaction: it rolls back unless commit() was called."""

from types import TracebackType
from typing import Protocol, Self

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncTransaction


class UnitOfWork(Protocol):
    connection: AsyncConnection

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    async def commit(self) -> None: ...


class SqlUnitOfWork:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._transaction: AsyncTransaction | None = None

    async def __aenter__(self) -> Self:
        self.connection = await self._engine.connect()
        self._transaction = await self.connection.begin()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self._transaction is not None and self._transaction.is_active:
                await self._transaction.rollback()
        finally:
            await self.connection.close()

    async def commit(self) -> None:
        assert self._transaction is not None, "commit() outside the unit of work"
        await self._transaction.commit()


class UnitOfWorkFactory(Protocol):
    def __call__(self) -> UnitOfWork: ...

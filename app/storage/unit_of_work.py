"""A unit of work over one PostgreSQL transaction: it rolls back unless commit() was called.

Every unit of work runs in a scope that PostgreSQL's row-level security enforces: a tenant (the rows of
that tenant only, for reading and for writing) or SYSTEM (the relay, the archiver, operators). The scope
is set with SET LOCAL semantics at the start of the transaction, so it cannot leak to the next one.
"""

from types import TracebackType
from typing import Final, Protocol, Self

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncTransaction

SYSTEM: Final = None  # the scope of components that work across tenants

_SET_SCOPE = text("SELECT set_config('remit.scope', :scope, true), set_config('remit.tenant_id', :tenant, true)")


class UnitOfWork(Protocol):
    connection: AsyncConnection

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    async def commit(self) -> None: ...


class SqlUnitOfWork:
    def __init__(self, engine: AsyncEngine, tenant_id: str | None = SYSTEM) -> None:
        self._engine = engine
        self._tenant_id = tenant_id
        self._transaction: AsyncTransaction | None = None

    async def __aenter__(self) -> Self:
        self.connection = await self._engine.connect()
        self._transaction = await self.connection.begin()
        scope = "system" if self._tenant_id is SYSTEM else "tenant"
        await self.connection.execute(_SET_SCOPE, {"scope": scope, "tenant": self._tenant_id or ""})
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
    def __call__(self, tenant_id: str | None = SYSTEM) -> UnitOfWork:
        """A unit of work for one tenant's rows, or for every tenant's (SYSTEM)."""
        ...

"""What every CLI command shares: settings, a database handle, async running and clear errors."""

import asyncio
import functools
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from sqlalchemy.ext.asyncio import AsyncEngine

from app.bootstrap import uow_factory_for
from app.errors import RemitError
from app.settings import Settings, get_settings
from app.storage.engine import make_engine, wait_for_database
from app.storage.unit_of_work import UnitOfWorkFactory

# Outside a terminal (pipes, CI logs) rich would wrap tables at 80 columns; the fallback keeps them readable.
_WIDTH = shutil.get_terminal_size((160, 40)).columns
console = Console(width=_WIDTH)
err_console = Console(stderr=True, width=_WIDTH)

P = ParamSpec("P")
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def friendly_errors(func: Callable[P, T]) -> Callable[P, T]:
    """Turn our own errors into one red line and exit code 2, instead of a traceback."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return func(*args, **kwargs)
        except RemitError as exc:
            err_console.print(f"[bold red]error:[/] {exc}")
            raise typer.Exit(2) from exc

    return wrapper


@asynccontextmanager
async def database(settings: Settings | None = None) -> AsyncIterator[tuple[AsyncEngine, UnitOfWorkFactory]]:
    settings = settings or get_settings()
    engine = make_engine(settings.database_url, pool_size=2)
    try:
        await wait_for_database(engine, timeout_seconds=10)
        yield engine, uow_factory_for(engine)
    finally:
        await engine.dispose()


async def with_uow(action: Callable[[UnitOfWorkFactory], Awaitable[T]]) -> T:
    async with database() as (_, uow_factory):
        return await action(uow_factory)

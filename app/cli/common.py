"""What every CLI command shares: a database handle, async running, and caller errors as one red line with
the exit code app/errors.py's table gives."""

import asyncio
import functools
import shutil
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

import typer

from app.bootstrap import Operator, Ports, operator, operator_database
from app.cli.safe_console import SafeConsole, line
from app.errors import CallerError, exit_code
from app.settings import get_settings
from app.storage.unit_of_work import UnitOfWorkFactory

# Outside a terminal (pipes, CI logs) rich would wrap tables at 80 columns; the fallback keeps them readable.
# Every command prints through these two: text a tenant wrote cannot act on the terminal (safe_console.py).
_WIDTH = shutil.get_terminal_size((160, 40)).columns
console = SafeConsole(width=_WIDTH)
err_console = SafeConsole(stderr=True, width=_WIDTH)

P = ParamSpec("P")
T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def friendly_errors(func: Callable[P, T]) -> Callable[P, T]:
    """Turn a caller error into one red line and its exit code, instead of a traceback."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return func(*args, **kwargs)
        except CallerError as exc:
            err_console.print(line(("error:", "bold red"), " ", exc), soft_wrap=True)  # one line, for grep too
            raise typer.Exit(exit_code(exc)) from exc

    return wrapper


async def with_uow(action: Callable[[UnitOfWorkFactory], Awaitable[T]]) -> T:
    """Operators work in the system scope (remit_system); a command that acts for one tenant, such as
    `remit submit`, asks for that tenant's scope and runs as remit_app."""
    async with operator_database(get_settings()) as uow_factory:
        return await action(uow_factory)


async def with_operator(action: Callable[[Operator], Awaitable[T]]) -> T:
    """Commands that change the broker too: the database, the AMQP connection, the management API, tenants."""
    async with operator(get_settings(), Ports()) as tools:
        return await action(tools)

"""`accounts load FILE`: open the accounts of a JSON Lines file, a chunk at a time, in one transaction."""

from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import create_async_engine

from corebank.accounts import open_accounts
from corebank.errors import BadAccountsFile
from corebank.schemas import AccountOpen

CHUNK = 1000


def _accounts(path: Path) -> Iterator[list[AccountOpen]]:
    chunk: list[AccountOpen] = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                chunk.append(AccountOpen.model_validate_json(line))
            except ValidationError as exc:
                # Field names only: the values would put account numbers on the terminal and in CI logs.
                fields = sorted({".".join(str(p) for p in e["loc"]) or "line" for e in exc.errors()})
                raise BadAccountsFile(f"{path.name} line {number}: invalid {', '.join(fields)}") from None
            if len(chunk) == CHUNK:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


async def load_accounts(database_url: str, path: Path) -> tuple[int, int]:
    """(opened, already present). Memory is one chunk; nothing is opened unless every line is valid."""
    engine = create_async_engine(database_url, pool_size=1, hide_parameters=True)
    opened = seen = 0
    try:
        async with engine.begin() as conn:
            for chunk in _accounts(path):
                opened += await open_accounts(conn, chunk)
                seen += len(chunk)
    finally:
        await engine.dispose()
    return opened, seen - opened

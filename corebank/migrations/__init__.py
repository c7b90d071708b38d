"""The core's own schema history: alembic with its own version table, run by `python -m corebank db upgrade`."""

import asyncio
from functools import cache
from pathlib import Path

from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.ext.asyncio import AsyncConnection

from alembic import command

VERSION_TABLE = "corebank_alembic_version"
_HERE = Path(__file__).resolve().parent


def alembic_config(database_url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(_HERE))
    config.set_main_option("path_separator", "os")
    config.attributes["database_url"] = database_url
    return config


async def upgrade_to_head(database_url: str) -> None:
    # env.py runs its own event loop; keep it off ours.
    await asyncio.to_thread(command.upgrade, alembic_config(database_url), "head")


@cache
def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config("")).get_current_head()


async def current_revision(conn: AsyncConnection) -> str | None:
    return await conn.run_sync(
        lambda sync: MigrationContext.configure(sync, opts={"version_table": VERSION_TABLE}).get_current_revision()
    )

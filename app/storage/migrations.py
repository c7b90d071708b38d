"""Run alembic programmatically: the prestart step and the test fixtures share this."""

import asyncio
from pathlib import Path

from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.ext.asyncio import AsyncEngine

from alembic import command

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Installed from the wheel, alembic/ travels inside the package (setup.py); a checkout, editable or not,
# keeps it at the top.
_PACKAGED = Path(__file__).resolve().parent / "schema"
SCRIPT_LOCATION = _PACKAGED if _PACKAGED.is_dir() else PROJECT_ROOT / "alembic"


def alembic_config(database_url: str) -> Config:
    # No alembic.ini: it only serves alembic's own command line in a checkout.
    config = Config()
    config.set_main_option("script_location", str(SCRIPT_LOCATION))
    config.set_main_option("path_separator", "os")
    config.attributes["database_url"] = database_url
    return config


async def upgrade_to_head(database_url: str) -> None:
    # alembic's env.py runs its own event loop; keep it off ours.
    await asyncio.to_thread(command.upgrade, alembic_config(database_url), "head")


def head_revision(database_url: str) -> str | None:
    return ScriptDirectory.from_config(alembic_config(database_url)).get_current_head()


async def current_revision(engine: AsyncEngine) -> str | None:
    async with engine.connect() as conn:
        return await conn.run_sync(lambda sync: MigrationContext.configure(sync).get_current_revision())

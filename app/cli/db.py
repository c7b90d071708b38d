"""`remit db`: the prestart step (wait for PostgreSQL, create the database if asked, migrate to head)."""

import asyncio

import asyncpg
import typer
from sqlalchemy.engine import make_url

from app.cli.common import console, friendly_errors, run
from app.errors import ServiceUnavailable
from app.settings import get_settings, owner_url
from app.storage.engine import make_engine, wait_for_database
from app.storage.migrations import upgrade_to_head

db_app = typer.Typer(help="Database set-up: `remit db upgrade` is the prestart step.", no_args_is_help=True)


async def create_database_if_missing(database_url: str) -> bool:
    url = make_url(database_url)
    admin = await _admin_connection(url.set(database="postgres").render_as_string(hide_password=False))
    try:
        exists = await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", url.database)
        if not exists:
            await admin.execute(f'CREATE DATABASE "{url.database}"')
        return not exists
    finally:
        await admin.close()


async def _admin_connection(url: str) -> asyncpg.Connection:
    dsn = url.replace("postgresql+asyncpg://", "postgresql://")
    for delay in (0.5, 1, 2, 4, 8):
        try:
            return await asyncpg.connect(dsn)
        except (OSError, asyncpg.PostgresError):
            await asyncio.sleep(delay)
    raise ServiceUnavailable(
        f"PostgreSQL at {make_url(url).render_as_string(hide_password=True)} is not reachable. "
        "Start it (see README: scripts/services.sh) or run `docker compose up -d`."
    )


async def prestart(create: bool) -> None:
    settings = get_settings()
    owner = owner_url(settings)
    if create and await create_database_if_missing(owner):
        console.print(f"created database {make_url(owner).database}")
    engine = make_engine(owner, pool_size=1)
    try:
        await wait_for_database(engine)
    finally:
        await engine.dispose()
    await upgrade_to_head(owner)
    await set_service_password(owner, settings.database_url)
    console.print("database migrated to head")


async def set_service_password(owner: str, service_url: str) -> None:
    """Where the service URL carries a password (docker-compose), give the service role that password."""
    service = make_url(service_url)
    if not service.password or service.username == make_url(owner).username:
        return
    admin = await _admin_connection(owner)
    try:
        password = await admin.fetchval("SELECT quote_literal($1)", service.password)
        await admin.execute(f'ALTER ROLE "{service.username}" WITH LOGIN PASSWORD {password}')
    finally:
        await admin.close()


@db_app.command("upgrade")
@friendly_errors
def upgrade(
    create: bool = typer.Option(False, "--create", help="Create the database first if it does not exist."),
) -> None:
    """Wait for PostgreSQL and run `alembic upgrade head`.

    Example: remit db upgrade --create
    """
    run(prestart(create))

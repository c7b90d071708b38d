"""`remit db`: the prestart step (wait for PostgreSQL, create the database if asked, migrate to head)."""

import typer
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from app.cli.common import console, err_console, friendly_errors, run
from app.resources import open_owner_engine
from app.settings import Settings, get_settings, owner_url, system_url
from app.storage.migrations import upgrade_to_head

# Seen with the external core on a server without autovacuum (docs/benchmarks.md, "External core"): a table never
# analyzed keeps the plans PostgreSQL made for it while it was empty, and prepared look-ups slow down as it grows.
NO_AUTOVACUUM = (
    "warning: autovacuum is off on this PostgreSQL server: remit's tables (outbox, processed_messages, ledger, "
    "dead letters) are then never analyzed, and the look-ups planned while they were small keep those plans as "
    "they grow. Turn autovacuum on, or run VACUUM ANALYZE on remit's database regularly."
)

db_app = typer.Typer(help="Database set-up: `remit db upgrade` is the prestart step.", no_args_is_help=True)


async def create_database_if_missing(settings: Settings) -> bool:
    """Create remit's database (the owner's URL names it) unless it exists; whether it was created."""
    name = make_url(owner_url(settings)).database
    async with open_owner_engine(settings, "postgres") as server, server.connect() as conn:
        exists = (await conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name})).first()
        if not exists:
            await conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    return not exists


async def prestart(settings: Settings, create: bool) -> None:
    if create and await create_database_if_missing(settings):
        console.print(f"created database {make_url(owner_url(settings)).database}")
    async with open_owner_engine(settings) as owner:
        await upgrade_to_head(owner_url(settings))
        for service_url in (settings.database_url, system_url(settings)):
            await set_service_password(owner, service_url)
        async with owner.connect() as conn:
            autovacuum = (await conn.execute(text("SHOW autovacuum"))).scalar_one()
    console.print("database migrated to head")
    if autovacuum != "on":
        err_console.print(NO_AUTOVACUUM, style="yellow", markup=False)


async def set_service_password(owner: AsyncEngine, service_url: str) -> None:
    """Where a service URL carries a password (docker-compose), give its role that password."""
    service = make_url(service_url)
    if not service.password or service.username == owner.url.username:
        return
    async with owner.connect() as conn:
        quoted = (await conn.execute(text("SELECT quote_literal(:p)"), {"p": service.password})).scalar_one()
        await conn.exec_driver_sql(f'ALTER ROLE "{service.username}" WITH LOGIN PASSWORD {quoted}')


@db_app.command("upgrade")
@friendly_errors
def upgrade(
    create: bool = typer.Option(False, "--create", help="Create the database first if it does not exist."),
) -> None:
    """Wait for PostgreSQL and run `alembic upgrade head`.

    Example: remit db upgrade --create
    """
    run(prestart(get_settings(), create))

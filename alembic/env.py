"""Async alembic environment reading the same Settings as the service."""

import asyncio

from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from alembic import context
from app.settings import get_settings, owner_url
from app.storage.tables import metadata
from reconciliation.tables import metadata as reconciliation_metadata

config = context.config


def _url() -> str:
    # An explicit URL (tests, prestart) wins over the environment.
    return config.attributes.get("database_url") or owner_url(get_settings())


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=[metadata, reconciliation_metadata], compare_type=True)
    with context.begin_transaction():
        context.run_migrations()


async def _run_async() -> None:
    engine = create_async_engine(_url())
    async with engine.connect() as connection:
        await connection.run_sync(_run)
    await engine.dispose()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
    else:
        asyncio.run(_run_async())


if context.is_offline_mode():
    context.configure(url=_url(), target_metadata=metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()

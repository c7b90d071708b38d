"""Shared resource set-up every remit process builds on (app/bootstrap.py composes them): the database roles,
the schema owner's engine, and the AMQP connection with the topology declared."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
from aio_pika.abc import AbstractRobustChannel, AbstractRobustConnection
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from app.consumer.core_http import core_client
from app.messaging.connection import connect, publisher_channel
from app.messaging.topology import Topology, declare_topology
from app.settings import Settings, owner_url, system_url
from app.storage.engine import make_engine, wait_for_database
from app.storage.unit_of_work import SYSTEM, SqlUnitOfWork, UnitOfWork, UnitOfWorkFactory


def uow_factory_for(engine: AsyncEngine, system_engine: AsyncEngine | None = None) -> UnitOfWorkFactory:
    """Tenant units of work on `engine`, SYSTEM ones on `system_engine`: the scope picks the role. Without a
    system engine both run on `engine` (the schema owner's, in set-up and tests)."""
    system = system_engine or engine

    def factory(tenant_id: str | None = SYSTEM) -> UnitOfWork:
        return SqlUnitOfWork(system if tenant_id is SYSTEM else engine, tenant_id)

    return factory


@dataclass(frozen=True, slots=True)
class Database:
    """The service's two PostgreSQL roles: remit_app for tenant-scoped work, remit_system for the rest."""

    tenant_engine: AsyncEngine
    system_engine: AsyncEngine
    uow: UnitOfWorkFactory

    async def wait(self, timeout_seconds: float = 30.0) -> None:
        for engine in (self.tenant_engine, self.system_engine):
            await wait_for_database(engine, timeout_seconds)

    async def dispose(self) -> None:
        await self.tenant_engine.dispose()
        await self.system_engine.dispose()


def build_database(settings: Settings, pool_size: int = 10) -> Database:
    """Both roles' engines (connections open on first use) and the factory that picks one by scope."""
    tenant, system = make_engine(settings.database_url, pool_size), make_engine(system_url(settings), pool_size)
    return Database(tenant, system, uow_factory_for(tenant, system))


@asynccontextmanager
async def open_database(settings: Settings, pool_size: int = 10, wait_seconds: float = 30.0) -> AsyncIterator[Database]:
    """`build_database`, once PostgreSQL answers for both roles; disposed on exit."""
    database = build_database(settings, pool_size)
    try:
        await database.wait(wait_seconds)
        yield database
    finally:
        await database.dispose()


@asynccontextmanager
async def open_owner_engine(settings: Settings, database: str | None = None) -> AsyncIterator[AsyncEngine]:
    """The schema owner's engine (migrations, set-up), on remit's database or on another one of the same
    server (`postgres`, to create or drop one); autocommit, since CREATE DATABASE cannot run in a transaction."""
    url = make_url(owner_url(settings))
    engine = make_engine(url.set(database=database or url.database).render_as_string(hide_password=False), 1)
    try:
        await wait_for_database(engine)
        yield engine.execution_options(isolation_level="AUTOCOMMIT")
    finally:
        await engine.dispose()


@dataclass(frozen=True, slots=True)
class Broker:
    """remit's AMQP connection, a confirming publisher channel on it, and the topology it declared."""

    connection: AbstractRobustConnection
    channel: AbstractRobustChannel
    topology: Topology


@asynccontextmanager
async def open_broker(settings: Settings, name: str) -> AsyncIterator[Broker]:
    """A connection named for the process (RabbitMQ's management UI shows it), with the topology declared."""
    connection = await connect(settings.amqp_url, name)
    try:
        channel = await publisher_channel(connection)
        topology = Topology.from_settings(settings)
        await declare_topology(channel, topology)
        yield Broker(connection, channel, topology)
    finally:
        await connection.close()


@asynccontextmanager
async def open_core_client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """The one pooled HTTP client to the external core at REMIT_CORE_BANKING_URL, closed on exit."""
    client = core_client(settings)
    try:
        yield client
    finally:
        await client.aclose()

"""Shared fixtures. Real services: one fresh, migrated database per test run (per xdist worker); a fresh vhost
per test; a database of its own for a test that a neighbour's leftover rows would disturb."""

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from aio_pika.abc import AbstractChannel, AbstractRobustConnection
from sqlalchemy.ext.asyncio import AsyncEngine

from app.messaging.connection import connect, publisher_channel
from app.messaging.topology import Topology, declare_topology
from app.resources import uow_factory_for
from app.settings import Settings
from app.storage.engine import make_engine
from app.storage.migrations import upgrade_to_head
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.services import (
    OwnWorld,
    ServiceEnv,
    ServiceProcess,
    app_database_url,
    create_database,
    create_vhost,
    delete_vhost,
    drop_database,
    system_database_url,
)
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import Routing

# pytest-xdist's workers run with COLUMNS=80 and LINES=24 set, where a plain run has no terminal at all: the CLI
# (app/cli/common.py reads the width once, on import) would then wrap its tables and errors at 80 columns.
if "PYTEST_XDIST_WORKER" in os.environ:
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)


@pytest.fixture(scope="session")
async def database_url() -> AsyncIterator[str]:
    url = await create_database()
    await upgrade_to_head(url)
    yield url
    await drop_database(url)


@pytest.fixture
def vhost() -> Iterator[str]:
    name = create_vhost()
    yield name
    delete_vhost(name)


@pytest.fixture
def service_env(database_url: str, vhost: str) -> ServiceEnv:
    return ServiceEnv(database_url=database_url, vhost=vhost)


def settings_for(service_env: ServiceEnv) -> Settings:
    return Settings(
        database_url=app_database_url(service_env.database_url),
        migration_database_url=service_env.database_url,
        amqp_url=service_env.amqp_url,
        retry_delays_seconds=[0.2, 0.5, 1.0],
    )


@pytest.fixture
def settings(service_env: ServiceEnv) -> Iterator[Settings]:
    Routing.amqp_url = service_env.amqp_url
    yield settings_for(service_env)
    Routing.amqp_url = None


@pytest.fixture
async def own_database() -> AsyncIterator[str]:
    """A fresh, migrated database for one test: the session's database holds what earlier tests left (outbox
    rows no relay ever published, other consumers' heartbeats), and which tests ran earlier depends on the
    order, which xdist changes from run to run."""
    url = await create_database()
    await upgrade_to_head(url)
    yield url
    await drop_database(url)


@pytest.fixture
async def own_world(own_database: str, vhost: str) -> AsyncIterator[OwnWorld]:
    service_env = ServiceEnv(database_url=own_database, vhost=vhost)
    engine = make_engine(own_database, pool_size=2)
    yield OwnWorld(service_env, settings_for(service_env), engine, uow_factory_for(engine))
    await engine.dispose()


@pytest.fixture(scope="session")
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    eng = make_engine(database_url, pool_size=5)
    yield eng
    await eng.dispose()


@pytest.fixture(scope="session")
def uow_factory(engine: AsyncEngine) -> UnitOfWorkFactory:
    return uow_factory_for(engine)


@pytest.fixture(scope="session")
async def app_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """The database as tenant-scoped code sees it: as remit_app."""
    eng = make_engine(app_database_url(database_url), pool_size=2)
    yield eng
    await eng.dispose()


@pytest.fixture(scope="session")
async def system_engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    """The database as the relay, the archiver and operators see it: as remit_system."""
    eng = make_engine(system_database_url(database_url), pool_size=2)
    yield eng
    await eng.dispose()


@pytest.fixture
def logs_dir(tmp_path: Path) -> Path:
    path = tmp_path / "logs"
    path.mkdir()
    return path


@pytest.fixture
async def amqp(settings: Settings) -> AsyncIterator[AbstractRobustConnection]:
    connection = await connect(settings.amqp_url, "remit-tests")
    yield connection
    await connection.close()


@pytest.fixture
async def channel(amqp: AbstractRobustConnection, settings: Settings) -> AbstractChannel:
    chan = await publisher_channel(amqp)
    await declare_topology(chan, Topology.from_settings(settings))
    return chan


@pytest.fixture
def consumer(service_env: ServiceEnv, logs_dir: Path) -> Iterator[ServiceProcess]:
    """The consumer as a real process against this test's vhost and database."""
    process = ServiceProcess.consumer(service_env.env(), logs_dir / "consumer.log")
    yield process
    process.stop()


@pytest.fixture
def tenant_users(settings: Settings, vhost: str) -> Iterator[TenantUsers]:
    """Tenants' own RabbitMQ users in this test's vhost (direct publishers), removed after the test."""
    users = TenantUsers(settings.amqp_url, vhost)
    yield users
    users.remove_all()

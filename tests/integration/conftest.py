"""Integration fixtures: the consumer as a real process against this test's vhost and database."""

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from aio_pika.abc import AbstractChannel, AbstractRobustConnection

from app.messaging.connection import connect, publisher_channel
from app.messaging.topology import Topology, declare_topology
from app.settings import Settings
from tests.utils.services import ServiceEnv, ServiceProcess

pytestmark = pytest.mark.integration


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
    process = ServiceProcess.consumer(service_env.env(), logs_dir / "consumer.log")
    yield process
    process.stop()

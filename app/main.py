"""The consumer service: `faststream run app.main:app`."""

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from faststream import ContextRepo, FastStream
from faststream.rabbit import RabbitBroker
from faststream.rabbit.schemas import Channel
from faststream.specification import AsyncAPI

from app.bootstrap import build_consumer
from app.consumer.handler import register_consumer
from app.logs import configure_logging
from app.messaging.connection import connect, publisher_channel
from app.messaging.topology import Topology, declare_topology
from app.settings import get_settings
from app.storage.engine import make_engine, wait_for_database

settings = get_settings()
topology = Topology.from_settings(settings)
broker = RabbitBroker(
    settings.amqp_url,
    default_channel=Channel(prefetch_count=settings.prefetch, on_return_raises=True),
    graceful_timeout=30.0,
    log_level=logging.DEBUG,  # one line per message at INFO would drown the log at 10k msg/s
)
register_consumer(broker, topology)


@asynccontextmanager
async def lifespan(context: ContextRepo) -> AsyncIterator[None]:
    configure_logging()
    engine = make_engine(settings.database_url)
    await wait_for_database(engine)
    connection = await connect(settings.amqp_url, "remit-consumer-publisher")
    channel = await publisher_channel(connection)
    await declare_topology(channel, topology)
    services = build_consumer(settings, engine, channel)
    await services.committer.start()
    context.set_global("services", services)
    try:
        yield
    finally:
        await services.committer.stop()
        await connection.close()
        await engine.dispose()


app = FastStream(
    broker,
    lifespan=lifespan,
    specification=AsyncAPI(title="remit", version="0.1.0", description="Payment message processing"),
)

"""The consumer service: `faststream run app.main:app`."""

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from faststream import ContextRepo
from faststream.asgi import AsgiFastStream
from faststream.rabbit import RabbitBroker
from faststream.rabbit.schemas import Channel
from faststream.specification import AsyncAPI

from app.bootstrap import build_consumer
from app.consumer.handler import register_consumer
from app.logs import configure_logging
from app.messaging.connection import connect, publisher_channel
from app.messaging.documented import document_publishers
from app.messaging.topology import Topology, declare_topology
from app.observability.health import Readiness, health_routes
from app.observability.metrics import Metrics
from app.observability.store_gauges import refresh_forever
from app.settings import Settings, get_settings
from app.storage.engine import make_engine, wait_for_database

DESCRIPTION = (
    "remit moves each payment exactly once. Publishers send payment messages (wire contract v1) to the "
    "`payments` topic exchange with routing key `<tenant_id>.payment`; the consumer books them idempotently "
    "and acks after the commit; failures go round delay queues or to the dead-letter exchange."
)


def create_broker(settings: Settings) -> RabbitBroker:
    topology = Topology.from_settings(settings)
    broker = RabbitBroker(
        settings.amqp_url,
        default_channel=Channel(prefetch_count=settings.prefetch, on_return_raises=True),
        graceful_timeout=30.0,
        log_level=logging.DEBUG,  # one line per message at INFO would drown the log at 10k msg/s
        description="RabbitMQ 3.10+ / 4.x; quorum queues; every tenant publishes as its own RabbitMQ user.",
    )
    register_consumer(broker, topology)
    document_publishers(broker, topology)
    return broker


def create_app(settings: Settings) -> AsgiFastStream:
    broker = create_broker(settings)
    metrics = Metrics()
    readiness = Readiness(broker, settings.database_url)

    @asynccontextmanager
    async def lifespan(context: ContextRepo) -> AsyncIterator[None]:
        configure_logging()
        engine = make_engine(settings.database_url)
        await wait_for_database(engine)
        connection = await connect(settings.amqp_url, "remit-consumer-publisher")
        channel = await publisher_channel(connection)
        await declare_topology(channel, Topology.from_settings(settings))
        services = build_consumer(settings, engine, channel, metrics=metrics)
        await services.committer.start()
        gauges = asyncio.create_task(refresh_forever(engine, metrics), name="store-gauges")
        readiness.engine, readiness.consuming = engine, services.committer.running
        context.set_global("services", services)
        try:
            yield
        finally:
            readiness.consuming = lambda: False
            gauges.cancel()
            await services.committer.stop()
            await connection.close()
            await engine.dispose()

    return AsgiFastStream(
        broker,
        lifespan=lifespan,
        asgi_routes=health_routes(readiness, metrics),
        asyncapi_path="/docs/asyncapi",
        specification=AsyncAPI(title="remit", version="1.0.0", description=DESCRIPTION),
    )


app = create_app(get_settings())

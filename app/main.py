"""The consumer service: `faststream run app.main:app`."""

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aio_pika.abc import AbstractConnection
from faststream import ContextRepo
from faststream.asgi import AsgiFastStream
from faststream.rabbit import RabbitBroker
from faststream.rabbit.schemas import Channel
from faststream.specification import AsyncAPI
from sqlalchemy import select

from app.bootstrap import build_consumer, uow_factory_for
from app.consumer.pools import PoolManager
from app.logs import configure_logging
from app.messaging.connection import connect, publisher_channel
from app.messaging.documented import document_publishers
from app.messaging.topology import Topology, declare_topology
from app.observability.health import Readiness, health_routes
from app.observability.metrics import Metrics
from app.observability.store_gauges import refresh_forever
from app.settings import Settings, get_settings
from app.storage.engine import make_engine, wait_for_database
from app.storage.tables import tenants
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.routing import Route, apply_routes

POOL_SYNC_SECONDS = 2.0
DESCRIPTION = (
    "remit moves each payment exactly once. Publishers send payment messages (wire contract v1) to the "
    "`payments` topic exchange with routing key `<tenant_id>.payment`; the consumer books them idempotently "
    "and acks after the commit; failures go round delay queues or to the dead-letter exchange."
)


def create_broker(settings: Settings) -> tuple[RabbitBroker, PoolManager]:
    topology = Topology.from_settings(settings)
    broker = RabbitBroker(
        settings.amqp_url,
        default_channel=Channel(prefetch_count=settings.prefetch, on_return_raises=True),
        graceful_timeout=30.0,
        log_level=logging.DEBUG,  # one line per message at INFO would drown the log at 10k msg/s
        description="RabbitMQ 3.10+ / 4.x; quorum queues; every tenant publishes as its own RabbitMQ user.",
    )
    pools = PoolManager(broker, topology, settings.tier_workers, settings.prefetch)
    document_publishers(broker, topology)
    return broker, pools


async def route_every_tenant(uow: UnitOfWorkFactory, connection: AbstractConnection, topology: Topology) -> None:
    """Bind every tenant's key to its queue: a consumer that starts on a fresh broker routes everyone."""
    async with uow() as u:
        rows = (
            await u.connection.execute(select(tenants.c.tenant_id, tenants.c.tier, tenants.c.dedicated_queue))
        ).all()
    await apply_routes(connection, topology, (Route(r.tenant_id, r.tier, r.dedicated_queue) for r in rows))


def create_app(settings: Settings) -> AsgiFastStream:
    broker, pools = create_broker(settings)
    topology = Topology.from_settings(settings)
    metrics = Metrics()
    readiness = Readiness(broker, settings.database_url)
    sync_context: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(context: ContextRepo) -> AsyncIterator[None]:
        configure_logging()
        engine = make_engine(settings.database_url)
        await wait_for_database(engine)
        connection = await connect(settings.amqp_url, "remit-consumer-publisher")
        channel = await publisher_channel(connection)
        await declare_topology(channel, topology)
        services = build_consumer(settings, engine, channel, metrics=metrics)
        await route_every_tenant(uow_factory_for(engine), connection, topology)
        await services.committer.start()
        gauges = asyncio.create_task(refresh_forever(engine, metrics), name="store-gauges")
        sync_context.update(uow=uow_factory_for(engine), connection=connection)
        pool_sync = asyncio.create_task(
            pools.run_forever(uow_factory_for(engine), connection, POOL_SYNC_SECONDS), name="pool-sync"
        )
        readiness.engine, readiness.consuming = engine, services.committer.running
        context.set_global("services", services)
        try:
            yield
        finally:
            readiness.consuming = lambda: False
            gauges.cancel()
            pool_sync.cancel()
            await services.committer.stop()
            await connection.close()
            await engine.dispose()

    async def apply_pool_states() -> None:
        # The broker starts every subscriber; a pool an admin stopped must not run until the first sync.
        await pools.sync(sync_context["uow"], sync_context["connection"])

    return AsgiFastStream(
        broker,
        lifespan=lifespan,
        after_startup=[apply_pool_states],
        asgi_routes=health_routes(readiness, metrics),
        asyncapi_path="/docs/asyncapi",
        specification=AsyncAPI(title="remit", version="1.0.0", description=DESCRIPTION),
    )


app = create_app(get_settings())

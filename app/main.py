"""The consumer service: `faststream run app.main:app`."""

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aio_pika.abc import AbstractConnection
from faststream import ContextRepo
from faststream.asgi import AsgiFastStream
from faststream.rabbit import RabbitBroker
from faststream.rabbit.schemas import Channel
from sqlalchemy import select

from app.bootstrap import build_consumer, uow_factory_for
from app.consumer.pools import PoolManager, WorkerSettings
from app.logs import configure_logging
from app.messaging.connection import connect, publisher_channel
from app.messaging.documented import SpecificationOf, specification_broker
from app.messaging.topology import Topology, declare_topology
from app.observability.health import Readiness, health_routes
from app.observability.metrics import Metrics
from app.observability.store_gauges import refresh_forever
from app.settings import Settings, get_settings
from app.storage.engine import make_engine, wait_for_database
from app.storage.tables import tenants
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.routing import Route, apply_routes

log = logging.getLogger("remit.consumer")
POOL_SYNC_SECONDS = 2.0
GRACEFUL_SECONDS = 30.0
DESCRIPTION = (
    "remit moves each payment exactly once. Publishers send payment messages (wire contract v1) to the "
    "`payments` topic exchange with routing key `<tenant_id>.payment`; the consumer books them idempotently "
    "and acks after the commit; failures go round delay queues or to the dead-letter exchange."
)


def create_broker(settings: Settings) -> RabbitBroker:
    # FastStream runs the process (lifespan, HTTP, signals) and checks the broker for /readyz; the queue
    # workers consume on channels of their own (app/consumer/worker.py).
    return RabbitBroker(
        settings.amqp_url,
        default_channel=Channel(on_return_raises=True),
        graceful_timeout=GRACEFUL_SECONDS,
        log_level=logging.DEBUG,
    )


async def route_every_tenant(uow: UnitOfWorkFactory, connection: AbstractConnection, topology: Topology) -> None:
    """Bind every tenant's key to its queue: a consumer that starts on a fresh broker routes everyone."""
    async with uow() as u:
        rows = (
            await u.connection.execute(select(tenants.c.tenant_id, tenants.c.tier, tenants.c.dedicated_queue))
        ).all()
    await apply_routes(connection, topology, (Route(r.tenant_id, r.tier, r.dedicated_queue) for r in rows))


def create_app(settings: Settings) -> AsgiFastStream:
    broker = create_broker(settings)
    topology = Topology.from_settings(settings)
    metrics = Metrics()
    readiness = Readiness(broker, settings.database_url)
    workers = WorkerSettings(settings.tier_workers, settings.prefetch, settings.commit_batch_max)

    @asynccontextmanager
    async def lifespan(context: ContextRepo) -> AsyncIterator[None]:
        configure_logging()
        engine = make_engine(settings.database_url)
        await wait_for_database(engine)
        uow = uow_factory_for(engine)
        connection = await connect(settings.amqp_url, "remit-consumer")
        channel = await publisher_channel(connection)
        await declare_topology(channel, topology)
        services = build_consumer(settings, engine, channel, metrics=metrics)
        await route_every_tenant(uow, connection, topology)
        await services.committer.start()
        pools = PoolManager(connection, topology, workers, services.processor.process_batch, metrics.observe_stage)
        await pools.sync(uow)  # before the first delivery: a pool an admin stopped stays stopped
        background = [
            asyncio.create_task(refresh_forever(engine, metrics), name="store-gauges"),
            asyncio.create_task(pools.run_forever(uow, POOL_SYNC_SECONDS), name="pool-sync"),
        ]
        readiness.engine = engine
        readiness.consuming = lambda: services.committer.running() and pools.any_running()
        try:
            yield
        finally:
            readiness.consuming = lambda: False
            for task in background:
                task.cancel()
            # Settle what the workers hold (ack after commit), bounded; anything left goes back to the queue.
            try:
                await asyncio.wait_for(pools.stop_all(), GRACEFUL_SECONDS)
            except TimeoutError:
                log.warning("workers still busy after %.0fs; their unacked deliveries go back", GRACEFUL_SECONDS)
            await services.committer.stop()
            await connection.close()
            await engine.dispose()

    return AsgiFastStream(
        broker,
        lifespan=lifespan,
        asgi_routes=health_routes(readiness, metrics),
        asyncapi_path="/docs/asyncapi",
        specification=SpecificationOf(
            specification_broker(settings.amqp_url, topology),
            title="remit",
            version="1.0.0",
            description=DESCRIPTION,
        ),
    )


app = create_app(get_settings())

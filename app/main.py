"""The consumer service: `faststream run app.main:app` (or `remit consume`)."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

from faststream import ContextRepo
from faststream.asgi import AsgiFastStream

from app.bootstrap import Ports, consumer_broker, running_consumer
from app.logs import configure_logging
from app.messaging.asyncapi_page import LocalAsyncAPIRoute, asset_routes
from app.messaging.documented import RemitSpecification
from app.messaging.topology import Topology
from app.observability.health import Readiness, health_routes
from app.observability.metrics import Metrics
from app.settings import Settings, get_settings

DESCRIPTION = (
    "remit moves each payment exactly once. Publishers send payment messages (wire contract v1) to the "
    "`payments` topic exchange with routing key `<tenant_id>.payment`; the consumer books them idempotently "
    "and acks after the commit; failures go round delay queues or to the dead-letter exchange."
)


def create_app(settings: Settings | None = None, ports: Ports | None = None) -> AsgiFastStream:
    settings = settings or get_settings()
    ports = ports or Ports()
    metrics = ports.metrics or Metrics()
    ports = replace(ports, metrics=metrics)  # the registry /metrics serves
    broker = consumer_broker(settings)
    readiness = Readiness(broker, settings.database_url, settings.relay_backlog_alert_seconds)

    @asynccontextmanager
    async def lifespan(context: ContextRepo) -> AsyncIterator[None]:
        configure_logging(settings.log_level, settings.log_format)
        async with running_consumer(settings, ports) as consumer:
            readiness.engine = consumer.database.tenant_engine
            readiness.system_engine = consumer.database.system_engine
            readiness.consuming = consumer.consuming
            readiness.core_banking = consumer.core.readiness
            try:
                yield
            finally:
                readiness.consuming = lambda: False

    return AsgiFastStream(
        broker,
        lifespan=lifespan,
        asgi_routes=[*health_routes(readiness, metrics), *asset_routes()],
        # No "try it out": it would publish whatever a visitor sends as the service's own (trusted) login.
        asyncapi_path=LocalAsyncAPIRoute(),
        specification=RemitSpecification(
            Topology.from_settings(settings), title="remit", version="1.0.0", description=DESCRIPTION
        ),
    )


def __getattr__(name: str) -> AsgiFastStream:
    """`app`, built when `faststream run app.main:app` asks for it: importing this module builds nothing."""
    if name == "app":
        return create_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

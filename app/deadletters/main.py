"""The archiver service: `faststream run app.deadletters.main:app` (or `remit archiver`)."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from faststream import ContextRepo, FastStream
from faststream.rabbit import RabbitBroker
from faststream.rabbit.schemas import Channel
from faststream.specification import AsyncAPI

from app.bootstrap import uow_factory_for
from app.deadletters.archiver import register_archiver
from app.deadletters.store import DeadLetterArchive
from app.logs import configure_logging
from app.messaging.connection import connect
from app.messaging.topology import Topology, declare_topology
from app.settings import get_settings
from app.storage.engine import make_engine, wait_for_database

# Enough deliveries in flight to keep a few database connections busy; dead letters are rare.
ARCHIVER_PREFETCH = 32

settings = get_settings()
topology = Topology.from_settings(settings)
broker = RabbitBroker(settings.amqp_url, default_channel=Channel(prefetch_count=ARCHIVER_PREFETCH))
register_archiver(broker, topology)


@asynccontextmanager
async def lifespan(context: ContextRepo) -> AsyncIterator[None]:
    configure_logging()
    engine = make_engine(settings.database_url, pool_size=4)
    await wait_for_database(engine)
    # The subscriber declares only the queue; the exchange and its binding come from the one topology.
    connection = await connect(settings.amqp_url, "remit-archiver-setup")
    try:
        await declare_topology(await connection.channel(), topology)
    finally:
        await connection.close()
    context.set_global("archive", DeadLetterArchive(uow_factory_for(engine)))
    try:
        yield
    finally:
        await engine.dispose()


app = FastStream(
    broker,
    lifespan=lifespan,
    specification=AsyncAPI(title="remit archiver", version="0.1.0", description="Dead-letter archiver"),
)

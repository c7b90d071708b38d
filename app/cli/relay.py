"""`remit relay`: run the outbox relay (one active instance; extra ones wait as standbys)."""

import asyncio
import signal

import typer
from prometheus_client import start_http_server

from app.cli.common import console, friendly_errors, run
from app.faults import KillAfter
from app.logs import configure_logging
from app.messaging.connection import connect, login_of, publisher_channel
from app.messaging.topology import Topology, declare_topology
from app.publisher.fair_selection import QueueDepths
from app.publisher.relay import OutboxRelay
from app.settings import get_settings
from app.storage.engine import make_engine, wait_for_database


async def run_relay(once: bool) -> int:
    settings = get_settings()
    engine = make_engine(settings.database_url, pool_size=2)
    connection = await connect(settings.amqp_url, "remit-relay")
    try:
        await wait_for_database(engine)
        channel = await publisher_channel(connection)
        topology = Topology.from_settings(settings)
        await declare_topology(channel, topology)
        fair = settings.relay_fair_share
        watermark = settings.relay_queue_high_watermark
        # --once drains the outbox, so it never waits for the consumers (no backpressure there)
        depths = QueueDepths(connection, topology, watermark) if fair and watermark > 0 and not once else None
        relay = OutboxRelay(
            engine,
            channel,
            settings.exchange,
            login_of(settings.amqp_url),
            settings.relay_batch_size,
            after_publish=KillAfter("after publish, before mark", settings.fault_kill_after_publishes),
            fair=fair,
            queue_depths=depths,
        )
        if once:
            total = 0
            while published := await relay.relay_once():
                total += published
            return total
        if settings.relay_metrics_port:
            start_http_server(settings.relay_metrics_port, addr="127.0.0.1")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await relay.run(stop, settings.relay_poll_seconds)
        return 0
    finally:
        await connection.close()
        await engine.dispose()


@friendly_errors
def relay(once: bool = typer.Option(False, "--once", help="Publish what is pending, then exit.")) -> None:
    """Publish accepted payments from the outbox to RabbitMQ, with publisher confirms.

    Example: remit relay            (runs until SIGTERM)
             remit relay --once     (drains the outbox and exits)
    """
    configure_logging()
    published = run(run_relay(once))
    if once:
        console.print(f"published {published} messages")

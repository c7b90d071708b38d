"""`remit relay`: run the outbox relay (one active instance; extra ones wait as standbys)."""

import asyncio
import signal

import aio_pika.exceptions
import typer

from app.bootstrap import Ports, running_relay
from app.cli.common import console, friendly_errors, run
from app.errors import ServiceUnavailable
from app.logs import configure_logging
from app.observability.outage import describe
from app.settings import Settings, get_settings


async def run_relay(settings: Settings, ports: Ports, once: bool) -> int:
    """Relay until SIGINT or SIGTERM; with `once`, until the outbox is empty. How many were published (once)."""
    async with running_relay(settings, ports, once) as relay:
        if once:
            total = 0
            try:
                while published := await relay.relay_once():
                    total += published
            except (OSError, RuntimeError, aio_pika.exceptions.AMQPError) as exc:  # ChannelInvalidStateError too
                raise ServiceUnavailable(
                    f"RabbitMQ stopped confirming publishes ({describe(exc)}) after {total} were published; the "
                    "rest wait in the outbox: run `remit relay --once` again once it is back"
                ) from exc
            return total
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await relay.run(stop, settings.relay_poll_seconds)
        return 0


@friendly_errors
def relay(once: bool = typer.Option(False, "--once", help="Publish what is pending, then exit.")) -> None:
    """Publish accepted payments from the outbox to RabbitMQ, with publisher confirms.

    Example: remit relay            (runs until SIGTERM)
             remit relay --once     (drains the outbox and exits)
    """
    settings = get_settings()
    configure_logging(settings.log_level, settings.log_format)
    published = run(run_relay(settings, Ports(), once))
    if once:
        console.print(f"published {published} messages")

"""Steps the consumer's real-service tests share: a consumer process for the length of a block (the
test-only core's failure rules given as environment overrides), a payment sent until it is booked or
dead-lettered, and a queue drained by a fresh consumer. The tests keep their own assertions."""

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aio_pika.abc import AbstractChannel

from app.messaging.topology import Topology
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.dead_letters import queue_depth_now
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.world import booked_once, dead_letters, send_payment


@contextmanager
def consumer_running(env: ServiceEnv, logs: Path, name: str = "consumer", **overrides: str) -> Iterator[ServiceProcess]:
    """`faststream run app.main:app` with `overrides` in its environment, stopped when the block ends."""
    consumer = ServiceProcess.consumer(env.env(**overrides), logs / f"{name}.log")
    try:
        yield consumer
    finally:
        consumer.stop()


async def send_until_booked(
    settings: Settings, uow: UnitOfWorkFactory, wire: dict[str, Any], timeout: float = 30
) -> None:
    """Send the payment as the service login and wait until it has exactly one ledger row."""
    await send_payment(settings, wire)
    await eventually(booked_once(uow, wire["message_id"]), timeout=timeout)


async def send_until_dead_lettered(settings: Settings, channel: AbstractChannel, wire: dict[str, Any]) -> Any:
    """Send the payment as the service login and take its one dead letter off the dead-letter queue."""
    await send_payment(settings, wire)
    [dead] = await dead_letters(channel, settings, 1)
    return dead


async def drain_with_a_new_consumer(service_env: ServiceEnv, settings: Settings, logs: Path) -> None:
    """A fresh consumer empties the basic tier queue, with a second more for a (wrong) second booking."""
    with consumer_running(service_env, logs):

        async def drained() -> bool:
            return await queue_depth_now(settings.amqp_url, Topology.from_settings(settings).tier_queue("basic")) == 0

        await eventually(drained)
        await asyncio.sleep(1.0)

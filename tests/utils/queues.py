"""Messages waiting in queues, for the live-queue and peek tests: payments accepted into the outbox and
published as the relay publishes them, raw publishes with a chosen timestamp, and taking a queue's
messages in order (with their delivery counts)."""

import asyncio
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aio_pika
import pytest
from aio_pika.abc import AbstractConnection

from app.messaging import headers
from app.messaging.properties import OutboundPayment, amqp_message
from app.messaging.topology import routing_key
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.world import outbox_rows, payment_row, write_csv


def require_broker_cli() -> None:
    """`rabbitmq-queues` (the broker's own peek) is on this machine: skipped locally, a failure in CI."""
    if shutil.which("rabbitmq-queues") is None:
        message = "rabbitmq-queues is not on this machine (Debian: it comes with the rabbitmq-server package)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI: {message}", pytrace=False)
        pytest.skip(message)


async def accept_payments(uow: UnitOfWorkFactory, tenant: str, n: int, folder: Path) -> list[Any]:
    """n payments accepted at ingress for the tenant: its outbox rows, in order."""
    rows = [payment_row(i) for i in range(n)]
    path = write_csv(folder / f"{tenant}-{n}.csv", rows)
    accepted = await submit_batch(SubmitBatch(tenant, path), uow, Settings())
    return await outbox_rows(uow, accepted.correlation_id)


async def publish_like_the_relay(amqp_url: str, rows: list[Any]) -> None:
    """Publish outbox rows exactly as the relay does (app/publisher/relay.py), as the service's login."""
    connection = await aio_pika.connect(amqp_url)
    try:
        channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        exchange = await channel.get_exchange("payments", ensure=False)
        now = datetime.now(UTC)
        for row in rows:
            outbound = OutboundPayment(
                row.message_id, row.correlation_id, row.tenant_id, row.accepted_at, row.expires_at, row.body
            )
            stamp = {headers.PUBLISHED_AT: int(now.timestamp() * 1000)}
            message = amqp_message(outbound, now, "guest", stamp)
            await exchange.publish(message, routing_key=routing_key(row.tenant_id), mandatory=True)
    finally:
        await connection.close()


async def take_all(connection: AbstractConnection, queue: str, n: int, timeout: float = 30) -> list[tuple[str, Any]]:
    """Consume and ack n messages from the queue, in delivery order: (message_id, x-delivery-count) each."""
    channel = await connection.channel()
    taken: list[tuple[str, Any]] = []
    try:
        source = await channel.get_queue(queue, ensure=False)
        async with asyncio.timeout(timeout), source.iterator() as messages:
            async for message in messages:
                taken.append((str(message.message_id), (message.headers or {}).get("x-delivery-count")))
                await message.ack()
                if len(taken) == n:
                    break
    finally:
        await channel.close()
    return taken


async def publish_paced(
    amqp_url: str, exchange: str, key: str, bodies: list[bytes], per_second: float, first_timestamp: datetime
) -> None:
    """Publish the bodies at a steady pace as the service's login; the first carries `first_timestamp` as
    its timestamp property, the others the time they are sent."""
    connection = await aio_pika.connect(amqp_url)
    try:
        channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        target = await channel.get_exchange(exchange, ensure=False)
        for i, body in enumerate(bodies):
            stamp = first_timestamp if i == 0 else datetime.now(UTC)
            message = aio_pika.Message(body, delivery_mode=aio_pika.DeliveryMode.PERSISTENT, timestamp=stamp)
            await target.publish(message, routing_key=key)
            await asyncio.sleep(1 / per_second)
    finally:
        await connection.close()

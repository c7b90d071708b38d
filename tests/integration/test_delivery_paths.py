"""The queue workers on the real broker, on the stock client (aiormq's `basic_consume`): every delivery reaches
the processor once, whole and in the queue's order, and is acked (nothing comes back when the channel closes);
after RabbitMQ force-closes the connection the pool consumes again on the new one the same way."""

import asyncio
from collections.abc import AsyncIterator, Sequence
from uuid import uuid4

import pytest
from aio_pika import Message
from aio_pika.abc import AbstractRobustConnection

from app.consumer.delivery import BodyLimits, Delivery
from app.consumer.worker import QueueWorkers
from app.messaging.connection import connect
from app.settings import Settings
from tests.chaos.faults import close_vhost_connections
from tests.utils.services import eventually

pytestmark = pytest.mark.integration

BODIES = BodyLimits(cap=4_000_000, prefix=4096, pool_bytes=256 * 1024 * 1024)
QUORUM = {"x-queue-type": "quorum"}
FRAME_MAX = 131_072  # RabbitMQ's default: a body above it comes in several frames


class Processed:
    def __init__(self) -> None:
        self.seen: list[tuple[str | None, bytes]] = []

    async def __call__(self, deliveries: Sequence[Delivery]) -> list[bool]:
        self.seen.extend((d.message_id, d.body) for d in deliveries)
        return [True] * len(deliveries)

    def ids(self) -> list[str | None]:
        return [message_id for message_id, _ in self.seen]

    async def has(self, n: int) -> bool:
        return len(self.seen) >= n


@pytest.fixture
async def connection(settings: Settings) -> AsyncIterator[AbstractRobustConnection]:
    connection = await connect(settings.amqp_url, "remit-tests-workers")
    yield connection
    await connection.close()


def _body(n: int) -> bytes:
    size = [0, FRAME_MAX + 1, 3 * FRAME_MAX + 17][n // 50 % 3] if n % 50 == 0 else 480
    return bytes([n % 251]) * size


async def _publish(amqp: AbstractRobustConnection, queue: str, bodies: dict[str, bytes]) -> None:
    channel = await amqp.channel()
    for message_id, body in bodies.items():
        await channel.default_exchange.publish(Message(body, message_id=message_id), routing_key=queue)
    await channel.close()


async def _published(amqp: AbstractRobustConnection, queue: str, message_id: str) -> bool:
    try:
        await _publish(amqp, queue, {message_id: b"{}"})
    except Exception:  # the connection is not back yet
        return False
    return True


async def _ready_count(amqp: AbstractRobustConnection, queue: str) -> int:
    channel = await amqp.channel()
    declared = await channel.declare_queue(queue, durable=True, arguments=QUORUM)
    await channel.close()
    return int(declared.declaration_result.message_count or 0)


async def test_every_delivery_reaches_the_workers_once_whole_in_order_and_is_acked(
    connection: AbstractRobustConnection,
) -> None:
    queue, processed = f"paths-{uuid4().hex}", Processed()
    workers = QueueWorkers(connection, queue, QUORUM, 2, 50, 64, processed, BODIES)
    await workers.start()
    sent = {f"m-{n:04}": _body(n) for n in range(600)}
    await _publish(connection, queue, sent)
    await eventually(lambda: processed.has(len(sent)))
    await asyncio.sleep(0.3)  # a delivery handed over twice would show up by now
    await workers.stop()  # closes the channel: whatever it had not acked goes back to the queue

    assert processed.seen == list(sent.items())
    assert await _ready_count(connection, queue) == 0, "every delivery was acked"


async def test_after_the_broker_closes_the_connection_the_pool_consumes_again(
    connection: AbstractRobustConnection, vhost: str
) -> None:
    queue, processed = f"paths-{uuid4().hex}", Processed()
    workers = QueueWorkers(connection, queue, QUORUM, 1, 50, 64, processed, BODIES)
    await workers.start()
    await _publish(connection, queue, {"before": b"{}"})
    await eventually(lambda: processed.has(1))
    assert await asyncio.to_thread(close_vhost_connections, vhost) >= 1
    await eventually(lambda: _published(connection, queue, "after"))  # once the connection is back
    await eventually(lambda: processed.has(2))
    running = workers.running
    await workers.stop()

    assert running == 1
    assert processed.ids() == ["before", "after"]
    assert await _ready_count(connection, queue) == 0

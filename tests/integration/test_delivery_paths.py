"""The queue workers on the real broker, along both paths a delivery can take to them: straight from remit's
frame receiver (app/messaging/frame_reader.py, `deliver_direct`: the consumer service's connection reads with
it), or inside aiormq's channel reader (app/consumer/inline_delivery.py: a connection reading with aiormq's own
receiver). Either way every delivery reaches the processor once, whole and in the queue's order, and is acked
(nothing comes back when the channel closes); after RabbitMQ force-closes the connection the pool consumes again
on the new one the same way; and a connection that hears nothing but deliveries for longer than aiormq's
heartbeat grace stays up."""

import asyncio
from collections.abc import AsyncIterator, Sequence
from uuid import uuid4

import aio_pika
import aiormq.connection
import pytest
from aio_pika import Message
from aio_pika.abc import AbstractRobustConnection
from aiormq.abc import DeliveredMessage

from app.consumer.delivery import BodyLimits, Delivery
from app.consumer.worker import QueueWorkers
from app.messaging.connection import connect
from app.messaging.frame_reader import AIORMQ_RECEIVER
from app.settings import Settings
from tests.chaos.faults import close_vhost_connections
from tests.integration.conftest import Counted
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


class Workers(QueueWorkers):
    """QueueWorkers, counting the deliveries that came through aiormq's channel (the inline path)."""

    via_aiormq = 0

    def _receive(self, message: DeliveredMessage) -> None:
        self.via_aiormq += 1
        super()._receive(message)


@pytest.fixture(params=["direct", "inline"])
async def path(
    request: pytest.FixtureRequest, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[str, AbstractRobustConnection]]:
    """A connection reading with remit's receiver (deliveries come direct) or with aiormq's (inline)."""
    Counted.made.clear()
    if request.param == "direct":
        monkeypatch.setattr(aiormq.connection, "FrameReceiver", Counted)
        connection = await connect(settings.amqp_url, "remit-tests-direct")
    else:  # not remit's connection class, which would install remit's receiver
        monkeypatch.setattr(aiormq.connection, "FrameReceiver", AIORMQ_RECEIVER)
        connection = await aio_pika.connect_robust(settings.amqp_url)
    yield request.param, connection
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


def _assert_path(name: str, workers: Workers, delivered: int) -> None:
    assert workers.via_aiormq == (0 if name == "direct" else delivered), f"every delivery came the {name} way"


async def test_every_delivery_reaches_the_workers_once_whole_in_order_and_is_acked(
    path: tuple[str, AbstractRobustConnection],
) -> None:
    name, connection = path
    queue, processed = f"paths-{uuid4().hex}", Processed()
    workers = Workers(connection, queue, QUORUM, 2, 50, 64, processed, BODIES)
    await workers.start()
    assert workers.inline, "the inline hook is in place on this aiormq (the fallback)"
    sent = {f"m-{n:04}": _body(n) for n in range(600)}
    await _publish(connection, queue, sent)
    await eventually(lambda: processed.has(len(sent)))
    await asyncio.sleep(0.3)  # a delivery handed over twice would show up by now
    await workers.stop()  # closes the channel: whatever it had not acked goes back to the queue

    assert processed.seen == list(sent.items())
    _assert_path(name, workers, len(sent))
    assert await _ready_count(connection, queue) == 0, "every delivery was acked"


async def test_after_the_broker_closes_the_connection_the_pool_consumes_again(
    path: tuple[str, AbstractRobustConnection], vhost: str
) -> None:
    name, connection = path
    queue, processed = f"paths-{uuid4().hex}", Processed()
    workers = Workers(connection, queue, QUORUM, 1, 50, 64, processed, BODIES)
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
    _assert_path(name, workers, 2)
    assert await _ready_count(connection, queue) == 0
    if name == "direct":
        assert len(Counted.made) >= 2, "the new connection reads with remit's receiver"


async def test_a_connection_hearing_only_deliveries_outlives_the_heartbeat_grace(
    settings: Settings, amqp: AbstractRobustConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aiormq drops a connection that gave it no frame for (heartbeat + 1) x 3 seconds, and RabbitMQ sends no
    heartbeat while it sends deliveries: with a 1-second heartbeat, 9 seconds of nothing but deliveries."""
    monkeypatch.setattr(aiormq.connection, "FrameReceiver", Counted)
    Counted.made.clear()
    consuming = await connect(f"{settings.amqp_url}?heartbeat=1", "remit-tests-heartbeat")
    reconnected: list[object] = []
    consuming.reconnect_callbacks.add(lambda *_: reconnected.append(1))
    queue, processed = f"paths-{uuid4().hex}", Processed()
    workers = Workers(consuming, queue, QUORUM, 1, 50, 64, processed, BODIES)
    await workers.start()
    try:
        publisher = await amqp.channel()
        loop = asyncio.get_running_loop()
        until, n = loop.time() + 9, 0
        while loop.time() < until:
            await publisher.default_exchange.publish(Message(b"{}", message_id=f"m-{n}"), routing_key=queue)
            n += 1
            await asyncio.sleep(0.02)
        await eventually(lambda: processed.has(n))
    finally:
        await workers.stop()
        await consuming.close()

    assert reconnected == [], "the consumer's connection stayed up"
    assert len(Counted.made) == 1
    assert processed.ids() == [f"m-{i}" for i in range(n)]
    assert workers.via_aiormq == 0

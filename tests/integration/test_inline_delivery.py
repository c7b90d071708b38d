"""The queue workers on the real broker, consuming on aiormq's channel with deliveries handed over inside its
reader (app/consumer/inline_delivery.py): every delivery reaches the processor once and in the queue's order,
each is acked (nothing comes back when the channel closes), and after RabbitMQ force-closes the connection the
pool consumes again on the new channel by itself."""

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from uuid import uuid4

import pytest
from aio_pika import Message
from aio_pika.abc import AbstractRobustConnection

from app.consumer.delivery import BodyLimits, Delivery
from app.consumer.worker import QueueWorkers
from tests.chaos.faults import close_vhost_connections
from tests.utils.services import eventually

pytestmark = pytest.mark.integration

BODIES = BodyLimits(cap=65_536, prefix=4096, pool_bytes=64 * 1024 * 1024)
QUORUM = {"x-queue-type": "quorum"}


class Processed:
    def __init__(self) -> None:
        self.ids: list[str | None] = []

    async def __call__(self, deliveries: Sequence[Delivery]) -> list[bool]:
        self.ids.extend(d.message_id for d in deliveries)
        return [True] * len(deliveries)


def _now(check: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def checked() -> bool:
        return check()

    return checked


async def _publish(amqp: AbstractRobustConnection, queue: str, ids: Sequence[str]) -> None:
    channel = await amqp.channel()
    for message_id in ids:
        await channel.default_exchange.publish(Message(b"{}", message_id=message_id), routing_key=queue)
    await channel.close()


async def _published(amqp: AbstractRobustConnection, queue: str, message_id: str) -> bool:
    try:
        await _publish(amqp, queue, [message_id])
    except Exception:  # the connection is not back yet
        return False
    return True


async def _ready_count(amqp: AbstractRobustConnection, queue: str) -> int:
    channel = await amqp.channel()
    declared = await channel.declare_queue(queue, durable=True, arguments=QUORUM)
    count = declared.declaration_result.message_count
    await channel.close()
    return int(count or 0)


async def test_every_delivery_reaches_the_workers_once_in_order_and_is_acked(amqp: AbstractRobustConnection) -> None:
    queue, processed = f"inline-{uuid4().hex}", Processed()
    workers = QueueWorkers(amqp, queue, QUORUM, 2, 50, 64, processed, BODIES)
    await workers.start()
    assert workers.inline, "the hook is in place on this aiormq"
    ids = [f"m-{n:04}" for n in range(600)]
    await _publish(amqp, queue, ids)
    await eventually(_now(lambda: len(processed.ids) >= len(ids)))
    await asyncio.sleep(0.3)  # a delivery handed over twice would show up by now
    await workers.stop()  # closes the channel: whatever it had not acked goes back to the queue
    assert processed.ids == ids
    assert await _ready_count(amqp, queue) == 0, "every delivery was acked"


async def test_after_the_broker_closes_the_connection_the_pool_consumes_again(
    amqp: AbstractRobustConnection, vhost: str
) -> None:
    queue, processed = f"inline-{uuid4().hex}", Processed()
    workers = QueueWorkers(amqp, queue, QUORUM, 1, 50, 64, processed, BODIES)
    await workers.start()
    await _publish(amqp, queue, ["before"])
    await eventually(_now(lambda: processed.ids == ["before"]))
    assert await asyncio.to_thread(close_vhost_connections, vhost) >= 1
    await eventually(lambda: _published(amqp, queue, "after"))  # once the connection is back
    await eventually(_now(lambda: "after" in processed.ids))
    assert workers.running == 1
    await workers.stop()
    assert processed.ids == ["before", "after"]
    assert await _ready_count(amqp, queue) == 0

"""remit's frame receiver (app/messaging/frame_reader.py) on the real broker: bodies bigger than a frame,
many headers and empty bodies arrive intact and in order, and a connection RabbitMQ force-closes comes back
reading with it."""

import asyncio
from uuid import uuid4

import pytest
from aio_pika import Message
from aio_pika.abc import AbstractIncomingMessage, AbstractRobustConnection

from tests.chaos.faults import close_vhost_connections
from tests.integration.conftest import Counted
from tests.utils.services import eventually

pytestmark = pytest.mark.integration

QUORUM = {"x-queue-type": "quorum"}
FRAME_MAX = 131_072  # RabbitMQ's default: a body above it comes in several frames


def _messages() -> list[Message]:
    sizes = [0, 1, 480, FRAME_MAX - 8, FRAME_MAX - 7, FRAME_MAX + 1, 3 * FRAME_MAX + 17, 2_000_000]
    return [
        Message(
            bytes([n % 251]) * size,
            message_id=f"m-{n}",
            headers={f"x-h{i}": "v" * i for i in range(n * 5)} | {"x-n": n, "x-float": 1.5, "x-none": None},
        )
        for n, size in enumerate(sizes)
    ]


async def _consume(connection: AbstractRobustConnection, queue: str, n: int) -> list[AbstractIncomingMessage]:
    channel = await connection.channel()
    declared = await channel.declare_queue(queue, durable=True, arguments=QUORUM)
    received: list[AbstractIncomingMessage] = []
    async with declared.iterator() as messages:
        async for message in messages:
            await message.ack()
            received.append(message)
            if len(received) == n:
                break
    await channel.close()
    return received


async def _publish(connection: AbstractRobustConnection, queue: str, messages: list[Message]) -> None:
    channel = await connection.channel()
    await channel.declare_queue(queue, durable=True, arguments=QUORUM)
    for message in messages:
        await channel.default_exchange.publish(message, routing_key=queue)
    await channel.close()


async def test_big_bodies_many_headers_and_empty_bodies_arrive_intact(buffered: AbstractRobustConnection) -> None:
    queue, sent = f"frames-{uuid4().hex}", _messages()

    await _publish(buffered, queue, sent)
    received = await asyncio.wait_for(_consume(buffered, queue, len(sent)), 60)

    assert len(Counted.made) == 1, "the connection reads with remit's receiver"
    assert [m.body for m in received] == [m.body for m in sent]
    assert [m.message_id for m in received] == [m.message_id for m in sent]
    assert [m.headers for m in received] == [m.headers for m in sent]


async def test_a_force_closed_connection_comes_back_reading_with_it(
    buffered: AbstractRobustConnection, vhost: str
) -> None:
    queue = f"frames-{uuid4().hex}"
    await _publish(buffered, queue, [Message(b"before")])
    assert [m.body for m in await _consume(buffered, queue, 1)] == [b"before"]

    assert await asyncio.to_thread(close_vhost_connections, vhost) >= 1

    async def published() -> bool:
        try:
            await _publish(buffered, queue, [Message(b"after")])
        except Exception:  # the connection is not back yet
            return False
        return True

    await eventually(published)
    assert [m.body for m in await asyncio.wait_for(_consume(buffered, queue, 1), 60)] == [b"after"]
    assert len(Counted.made) >= 2, "the new connection reads with remit's receiver too"

"""Exact queue facts straight from the broker."""

import aio_pika.exceptions
from aio_pika.abc import AbstractConnection


async def ready_count(connection: AbstractConnection, name: str) -> int | None:
    """Messages ready in the queue now, or None if it does not exist.

    A passive declare on a channel of its own: a missing queue closes the channel it is asked on, and a
    robust channel would answer a repeated passive declare from its cache.
    """
    channel = await connection.channel()
    try:
        declared = await channel.declare_queue(name, passive=True)
        return int(declared.declaration_result.message_count or 0)
    except aio_pika.exceptions.ChannelNotFoundEntity:
        return None
    finally:
        if not channel.is_closed:
            await channel.close()

"""AMQP connections: publisher channels always confirm and raise on unroutable messages."""

from urllib.parse import unquote, urlsplit

import aio_pika
from aio_pika.abc import AbstractRobustChannel, AbstractRobustConnection


async def connect(amqp_url: str, name: str) -> AbstractRobustConnection:
    return await aio_pika.connect_robust(amqp_url, client_properties={"connection_name": name})


async def publisher_channel(connection: AbstractRobustConnection) -> AbstractRobustChannel:
    channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
    return channel


def login_of(amqp_url: str) -> str:
    """The user the service logs in as; RabbitMQ validates the user_id property against it."""
    return unquote(urlsplit(amqp_url).username or "guest")

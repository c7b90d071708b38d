"""AMQP connections: publisher channels always confirm and raise on unroutable messages."""

from urllib.parse import quote, unquote, urlsplit, urlunsplit

import aio_pika
from aio_pika.abc import AbstractRobustChannel, AbstractRobustConnection


async def connect(amqp_url: str, name: str) -> AbstractRobustConnection:
    return await aio_pika.connect_robust(amqp_url, client_properties={"connection_name": name})


async def publisher_channel(connection: AbstractRobustConnection) -> AbstractRobustChannel:
    channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
    return channel


def vhost_of(amqp_url: str) -> str:
    path = urlsplit(amqp_url).path
    return unquote(path[1:]) if len(path) > 1 else "/"


def with_login(amqp_url: str, user: str, password: str) -> str:
    parts = urlsplit(amqp_url)
    netloc = f"{quote(user, safe='')}:{quote(password, safe='')}@{parts.hostname}:{parts.port or 5672}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def login_of(amqp_url: str) -> str:
    """The user the service logs in as; RabbitMQ validates the user_id property against it."""
    return unquote(urlsplit(amqp_url).username or "guest")

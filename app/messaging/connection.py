"""AMQP connections: publisher channels always confirm and raise on unroutable messages; a lost connection
comes back by itself, backing off (app/messaging/reconnect.py)."""

import shlex
from urllib.parse import quote, unquote, urlsplit, urlunsplit

import aio_pika
import aio_pika.exceptions
from aio_pika.abc import AbstractRobustChannel, AbstractRobustConnection
from tenacity import AsyncRetrying, retry_if_exception, stop_after_delay, wait_random_exponential

from app.errors import ServiceUnavailable, UsageError
from app.messaging.reconnect import BackingOffConnection

BROKER_WAIT_SECONDS = 120.0  # a process started during a broker restart waits for it instead of exiting


async def connect(amqp_url: str, name: str, wait_seconds: float = BROKER_WAIT_SECONDS) -> AbstractRobustConnection:
    try:
        async for attempt in AsyncRetrying(
            stop=stop_after_delay(wait_seconds),
            wait=wait_random_exponential(multiplier=0.2, max=5.0),  # jitter: processes restarted together spread
            retry=retry_if_exception(_broker_not_up_yet),
            reraise=True,
        ):
            with attempt:
                return await aio_pika.connect_robust(
                    amqp_url, client_properties={"connection_name": name}, connection_class=BackingOffConnection
                )
    except aio_pika.exceptions.ProbableAuthenticationError as exc:
        raise UsageError(
            f"RabbitMQ refused the login of {login_of(amqp_url)!r}: check the user and password in REMIT_AMQP_URL"
        ) from exc
    except aio_pika.exceptions.InvalidFrameError as exc:
        if not vhost_refused(exc):
            raise
        raise UsageError(no_vhost(amqp_url)) from exc
    except (OSError, aio_pika.exceptions.AMQPConnectionError) as exc:
        host = urlsplit(amqp_url).hostname
        raise ServiceUnavailable(
            f"RabbitMQ at {host} is not reachable after {wait_seconds:.0f}s ({exc}). "
            "Start it (scripts/services.sh) or run `docker compose up -d`."
        ) from exc
    raise AssertionError("unreachable")


def _broker_not_up_yet(exc: BaseException) -> bool:
    # Wrong credentials will not get better by waiting: only a broker that is not up yet is retried.
    if isinstance(exc, aio_pika.exceptions.ProbableAuthenticationError):
        return False
    return isinstance(exc, OSError | aio_pika.exceptions.AMQPConnectionError)


def vhost_refused(exc: BaseException) -> bool:
    """The login was accepted and the broker closed the connection instead of opening its vhost: the vhost does
    not exist, or the user has no permissions in it (530 NOT_ALLOWED either way). aiormq 7 raises that as an
    InvalidFrameError naming the Connection.OpenOk it expected (the Close frame, with its text, is not kept);
    tests/integration/test_broker_wait.py fails if a release says it otherwise."""
    return isinstance(exc, aio_pika.exceptions.InvalidFrameError) and "Connection.OpenOk" in str(exc)


def no_vhost(amqp_url: str) -> str:
    """What is wrong and how to fix it, in one line: a vhost RabbitMQ would not open for remit's login."""
    vhost, user = vhost_of(amqp_url), login_of(amqp_url)
    v, u = shlex.quote(vhost), shlex.quote(user)
    return (
        f"RabbitMQ would not open vhost {vhost!r} (the path of REMIT_AMQP_URL) for user {user!r}: it does not "
        f"exist, or the user has no rights in it. Create it: rabbitmqctl add_vhost {v} && rabbitmqctl "
        f"set_permissions -p {v} {u} '.*' '.*' '.*'; or set REMIT_AMQP_URL to a vhost that exists (a URL ending "
        "in / is the default vhost)"
    )


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

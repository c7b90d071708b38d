"""A tenant publishing directly over AMQP as its own RabbitMQ user: what a hostile tenant controls.

The tests give it any body, headers, message_id, expiration and user_id they like; RabbitMQ alone
decides what it refuses (a routing key outside `<tenant>.*`: 403; a user_id other than the login: 406).
"""

import contextlib
from collections.abc import Mapping
from typing import Any

import aio_pika
import aiormq
import httpx

from app.messaging import headers
from app.messaging.connection import with_login
from app.messaging.properties import CONTENT_TYPE
from app.tenancy.broker_users import broker_user, new_password, write_pattern
from tests.utils.factories import to_wire_bytes
from tests.utils.hostile_properties import publish_raw
from tests.utils.services import MANAGEMENT_AUTH, MANAGEMENT_URL, management

_OWN = object()  # user_id default: the publisher's own login, as an honest tenant sets it


class TenantPublisher:
    """A direct AMQP publisher logged in as a tenant's own RabbitMQ user."""

    def __init__(self, amqp_url: str, vhost: str, tenant: str, password: str) -> None:
        self.tenant = tenant
        self.user = broker_user(tenant, vhost)
        self.url = with_login(amqp_url, self.user, password)

    async def publish(
        self,
        wire: dict[str, Any],
        routing_key: str | None = None,
        *,
        user_id: object = _OWN,
        tenant_header: str | None = None,
        extra_headers: Mapping[str, Any] | None = None,
        expiration: float | None = None,
    ) -> None:
        """Publish a wire dict; by default on the tenant's own key, with its own user_id and header."""
        await self.publish_bytes(
            to_wire_bytes(wire),
            routing_key,
            message_id=str(wire.get("message_id")),
            user_id=user_id,
            tenant_header=tenant_header or self.tenant,
            extra_headers=extra_headers,
            expiration=expiration,
        )

    def session(self) -> "TenantSession":
        """One connection for many publishes (the hostile runs send thousands)."""
        return TenantSession(self)

    async def publish_bytes(
        self,
        body: bytes,
        routing_key: str | None = None,
        *,
        message_id: str | None = None,
        user_id: object = _OWN,
        tenant_header: str | None = None,
        extra_headers: Mapping[str, Any] | None = None,
        expiration: float | None = None,
        content_type: str | None = CONTENT_TYPE,
    ) -> None:
        async with self.session() as session:
            await session.publish_bytes(
                body,
                routing_key,
                message_id=message_id,
                user_id=user_id,
                tenant_header=tenant_header,
                extra_headers=extra_headers,
                expiration=expiration,
                content_type=content_type,
            )

    def message(
        self,
        body: bytes,
        *,
        message_id: str | None,
        user_id: object,
        tenant_header: str | None,
        extra_headers: Mapping[str, Any] | None,
        expiration: float | None,
        content_type: str | None,
    ) -> aio_pika.Message:
        message_headers: dict[str, Any] = {headers.TENANT: tenant_header or self.tenant, **(extra_headers or {})}
        return aio_pika.Message(
            body,
            content_type=content_type,
            message_id=message_id,
            user_id=self.user if user_id is _OWN else user_id,  # type: ignore[arg-type]
            headers=message_headers,
            expiration=expiration,
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        )


class TenantSession:
    """An open connection of a tenant's user. RabbitMQ closes the channel on a refused publish (403, 406):
    the next publish opens a new one, as a real client would."""

    def __init__(self, publisher: TenantPublisher) -> None:
        self._publisher = publisher
        self._connection: aio_pika.abc.AbstractConnection | None = None
        self._channel: aio_pika.abc.AbstractChannel | None = None
        self._refused = False  # the broker closed the connection over the last publish: open a new one

    async def __aenter__(self) -> "TenantSession":
        self._connection = await aio_pika.connect(self._publisher.url)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._connection is not None:
            await self._connection.close()

    async def publish_bytes(
        self,
        body: bytes,
        routing_key: str | None = None,
        *,
        message_id: str | None = None,
        user_id: object = _OWN,
        tenant_header: str | None = None,
        extra_headers: Mapping[str, Any] | None = None,
        expiration: float | None = None,
        content_type: str | None = CONTENT_TYPE,
    ) -> None:
        exchange = await (await self._open_channel()).get_exchange("payments", ensure=False)
        message = self._publisher.message(
            body,
            message_id=message_id,
            user_id=user_id,
            tenant_header=tenant_header,
            extra_headers=extra_headers,
            expiration=expiration,
            content_type=content_type,
        )
        await exchange.publish(message, routing_key=routing_key or f"{self._publisher.tenant}.payment")

    async def _open_channel(self) -> aio_pika.abc.AbstractChannel:
        """The session's channel, opened again after a refusal closed it (a connection, too: RabbitMQ closes the
        connection over a frame it cannot parse)."""
        assert self._connection is not None, "use the session as an async context manager"
        if self._connection.is_closed or self._refused:
            with contextlib.suppress(Exception):
                await self._connection.close()
            self._connection = await aio_pika.connect(self._publisher.url)
            self._channel, self._refused = None, False
        if self._channel is None or self._channel.is_closed:
            self._channel = await self._connection.channel(publisher_confirms=True, on_return_raises=True)
        return self._channel

    async def publish_raw(self, body: bytes, raw_properties: bytes) -> None:
        """`body` with properties that are `raw_properties` on the wire (tests/utils/hostile_properties.py), on the
        tenant's own key, confirmed."""
        underlay = await (await self._open_channel()).get_underlay_channel()
        try:
            await publish_raw(underlay, f"{self._publisher.tenant}.payment", body, raw_properties)
        except Exception as refused:  # RabbitMQ closes the connection over a frame it cannot parse
            self._refused = True
            raise aiormq.exceptions.AMQPError(f"refused: {refused!r}") from refused


class TenantUsers:
    """Makes tenants' RabbitMQ users in a test's vhost, as `remit tenants add` does, and removes them after."""

    def __init__(self, amqp_url: str, vhost: str) -> None:
        self._amqp_url = amqp_url
        self._vhost = vhost
        self._users: list[str] = []

    def publisher(self, tenant: str) -> TenantPublisher:
        password = new_password()
        user = broker_user(tenant, self._vhost)
        management().provision_publisher(self._vhost, user, password, "payments", write_pattern(tenant))
        self._users.append(user)
        return TenantPublisher(self._amqp_url, self._vhost, tenant, password)

    def remove_all(self) -> None:
        with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH) as client:
            for user in self._users:
                client.delete(f"/api/users/{user}")

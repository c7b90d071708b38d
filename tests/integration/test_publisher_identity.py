"""Identity decides the tenant: RabbitMQ enforces per-tenant users, the consumer trusts only user_id."""

from collections.abc import Iterator
from typing import Any

import aio_pika
import aiormq
import httpx
import pytest
from aio_pika.abc import AbstractChannel

from app.messaging import headers
from app.messaging.connection import with_login
from app.messaging.properties import CONTENT_TYPE
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.broker_users import broker_user, new_password, write_pattern
from tests.utils.factories import make_wire_dict, to_wire_bytes
from tests.utils.services import MANAGEMENT_AUTH, MANAGEMENT_URL, ServiceProcess, eventually, management
from tests.utils.world import dead_letters, fresh_tenant, ledger_count, publish_raw

pytestmark = pytest.mark.integration


class Publisher:
    """A direct AMQP publisher logged in as a tenant's own RabbitMQ user."""

    def __init__(self, amqp_url: str, tenant: str, password: str) -> None:
        self.url = with_login(amqp_url, broker_user(tenant), password)
        self.user = broker_user(tenant)

    async def publish(self, wire: dict[str, Any], routing_key: str, user_id: str | None, tenant_header: str) -> None:
        connection = await aio_pika.connect(self.url)
        try:
            channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
            exchange = await channel.get_exchange("payments", ensure=False)
            message = aio_pika.Message(
                to_wire_bytes(wire),
                content_type=CONTENT_TYPE,
                message_id=wire["message_id"],
                user_id=user_id,
                headers={headers.TENANT: tenant_header},
                delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            )
            await exchange.publish(message, routing_key=routing_key)
        finally:
            await connection.close()


@pytest.fixture
def provision(vhost: str) -> Iterator[Any]:
    users: list[str] = []

    def make(amqp_url: str, tenant: str) -> Publisher:
        password = new_password()
        management().provision_publisher(vhost, broker_user(tenant), password, "payments", write_pattern(tenant))
        users.append(broker_user(tenant))
        return Publisher(amqp_url, tenant, password)

    yield make
    with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH) as client:
        for user in users:
            client.delete(f"/api/users/{user}")


async def test_a_tenant_publishing_as_itself_is_processed(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    consumer: ServiceProcess,
    provision: Any,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    publisher = provision(settings.amqp_url, tenant)
    wire = make_wire_dict(tenant_id=tenant)
    await publisher.publish(wire, f"{tenant}.payment", user_id=publisher.user, tenant_header=tenant)

    async def booked() -> bool:
        return await ledger_count(uow_factory, wire["message_id"]) == 1

    await eventually(booked)


async def test_the_broker_refuses_another_tenants_routing_key(
    uow_factory: UnitOfWorkFactory, settings: Settings, channel: AbstractChannel, provision: Any
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    publisher = provision(settings.amqp_url, a)
    with pytest.raises(aiormq.exceptions.ChannelAccessRefused):
        await publisher.publish(make_wire_dict(tenant_id=b), f"{b}.payment", user_id=publisher.user, tenant_header=b)


async def test_the_broker_refuses_a_forged_user_id(
    uow_factory: UnitOfWorkFactory, settings: Settings, channel: AbstractChannel, provision: Any
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    publisher = provision(settings.amqp_url, a)
    with pytest.raises(aiormq.exceptions.ChannelPreconditionFailed):
        await publisher.publish(make_wire_dict(tenant_id=a), f"{a}.payment", user_id=broker_user(b), tenant_header=a)


async def test_a_forged_tenant_in_header_and_body_is_quarantined(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    consumer: ServiceProcess,
    provision: Any,
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    publisher = provision(settings.amqp_url, a)
    wire = make_wire_dict(tenant_id=b)  # tenant A pays from B's name, on A's own routing key
    await publisher.publish(wire, f"{a}.payment", user_id=publisher.user, tenant_header=b)
    [dead] = await dead_letters(channel, settings, 1)
    assert dead.headers[headers.REASON] == "tenant_mismatch"
    assert f"may not publish for tenant '{b}'" in str(dead.headers[headers.ERROR_MESSAGE])
    assert await ledger_count(uow_factory, wire["message_id"]) == 0


async def test_a_message_without_user_id_is_quarantined(
    uow_factory: UnitOfWorkFactory, settings: Settings, channel: AbstractChannel, consumer: ServiceProcess
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant)
    await publish_raw(
        settings.amqp_url,
        to_wire_bytes(wire),
        f"{tenant}.payment",
        tenant_header=tenant,
        message_id=wire["message_id"],
        user_id=None,
    )
    [dead] = await dead_letters(channel, settings, 1)
    assert dead.headers[headers.REASON] == "tenant_mismatch"
    assert "no AMQP user_id" in str(dead.headers[headers.ERROR_MESSAGE])
    assert await ledger_count(uow_factory, wire["message_id"]) == 0

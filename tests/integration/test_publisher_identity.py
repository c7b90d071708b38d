"""Identity decides the tenant: RabbitMQ enforces per-tenant users, the consumer trusts only user_id."""

import aiormq
import pytest
from aio_pika.abc import AbstractChannel

from app.messaging import headers
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.broker_users import broker_user
from tests.utils.factories import make_wire_dict, to_wire_bytes
from tests.utils.services import ServiceProcess, eventually
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import dead_letters, fresh_tenant, ledger_count, publish_raw

pytestmark = pytest.mark.integration


async def test_a_tenant_publishing_as_itself_is_processed(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    consumer: ServiceProcess,
    tenant_users: TenantUsers,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    publisher = tenant_users.publisher(tenant)
    wire = make_wire_dict(tenant_id=tenant)
    await publisher.publish(wire)

    async def booked() -> bool:
        return await ledger_count(uow_factory, wire["message_id"]) == 1

    await eventually(booked)


async def test_the_broker_refuses_another_tenants_routing_key(
    uow_factory: UnitOfWorkFactory, settings: Settings, channel: AbstractChannel, tenant_users: TenantUsers
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    publisher = tenant_users.publisher(a)
    with pytest.raises(aiormq.exceptions.ChannelAccessRefused):
        await publisher.publish(make_wire_dict(tenant_id=b), f"{b}.payment", tenant_header=b)


async def test_the_broker_refuses_a_forged_user_id(
    uow_factory: UnitOfWorkFactory, settings: Settings, channel: AbstractChannel, tenant_users: TenantUsers, vhost: str
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    publisher = tenant_users.publisher(a)
    with pytest.raises(aiormq.exceptions.ChannelPreconditionFailed):
        await publisher.publish(make_wire_dict(tenant_id=a), user_id=broker_user(b, vhost))


async def test_a_forged_tenant_in_header_and_body_is_quarantined(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    consumer: ServiceProcess,
    tenant_users: TenantUsers,
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    publisher = tenant_users.publisher(a)
    wire = make_wire_dict(tenant_id=b)  # tenant A pays from B's name, on A's own routing key
    await publisher.publish(wire, tenant_header=b)
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

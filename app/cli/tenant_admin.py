"""The CLI's way to a TenantAdmin: database, AMQP connection and management API from Settings."""

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

from app.cli.common import database
from app.messaging.connection import connect, vhost_of
from app.messaging.management import Management
from app.messaging.topology import Topology
from app.settings import get_settings
from app.tenancy.admin import TenantAdmin

T = TypeVar("T")


@asynccontextmanager
async def tenant_admin() -> AsyncIterator[TenantAdmin]:
    settings = get_settings()
    async with database(settings) as (_, uow):
        connection = await connect(settings.amqp_url, "remit-cli")
        try:
            management = Management(settings.rabbitmq_management_url)
            yield TenantAdmin(
                uow, connection, Topology.from_settings(settings), management, vhost_of(settings.amqp_url)
            )
        finally:
            await connection.close()


async def with_admin(action: Callable[[TenantAdmin], Awaitable[T]]) -> T:
    async with tenant_admin() as admin:
        return await action(admin)

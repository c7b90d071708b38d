"""Tenant administration: the database record, the broker route and the tenant's RabbitMQ user change
together. Used by `remit tenants ...` and the admin API."""

from dataclasses import dataclass
from typing import Any

from aio_pika.abc import AbstractConnection
from sqlalchemy import Row, select, update

from app.errors import UsageError
from app.messaging.management import Management
from app.messaging.topology import TIERS, Topology
from app.storage.tables import tenants
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.broker_users import broker_user, new_password, write_pattern
from app.tenancy.routing import Route, apply_route
from app.tenancy.tenants import AddTenant, add_tenant


@dataclass(frozen=True, slots=True)
class Credentials:
    user: str
    password: str


class UnknownTenantError(UsageError):
    pass


class TenantAdmin:
    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        connection: AbstractConnection,
        topology: Topology,
        management: Management | None,
        vhost: str,
    ) -> None:
        self.uow = uow_factory
        self._connection = connection
        self._topology = topology
        self._management = management
        self._vhost = vhost

    async def add(self, command: AddTenant) -> tuple[bool, Credentials | None]:
        """Create the tenant, bind its routing key, and (first time only) its RabbitMQ user."""
        created = await add_tenant(command, self.uow)
        row = await self.show(command.tenant_id)
        await self._route(row)
        if not created or self._management is None:
            return created, None
        credentials = Credentials(broker_user(command.tenant_id), new_password())
        self._management.provision_publisher(
            self._vhost,
            credentials.user,
            credentials.password,
            self._topology.exchange,
            write_pattern(command.tenant_id),
        )
        return created, credentials

    async def show(self, tenant_id: str) -> Row[Any]:
        async with self.uow() as uow:
            row = (await uow.connection.execute(select(tenants).where(tenants.c.tenant_id == tenant_id))).one_or_none()
        if row is None:
            raise UnknownTenantError(f"unknown tenant {tenant_id!r}; see `remit tenants list`")
        return row

    async def set_tier(self, tenant_id: str, tier: str) -> str:
        """Move new traffic to the tier's queue; what is already queued is processed where it is."""
        if tier not in TIERS:
            raise UsageError(f"tier {tier!r} is not one of {', '.join(TIERS)}")
        return await self._route(await self._update(tenant_id, tier=tier))

    async def set_dedicated(self, tenant_id: str, dedicated: bool) -> str:
        return await self._route(await self._update(tenant_id, dedicated_queue=dedicated))

    async def set_limits(self, tenant_id: str, values: dict[str, int]) -> Row[Any]:
        if not values:
            return await self.show(tenant_id)
        return await self._update(tenant_id, **values)

    async def suspend(self, tenant_id: str) -> None:
        """Refuse new batches and cut direct publishers off; payments already accepted still complete."""
        await self._update(tenant_id, status="suspended")
        if self._management is not None:
            self._management.revoke_publisher(self._vhost, broker_user(tenant_id))

    async def resume(self, tenant_id: str) -> None:
        await self._update(tenant_id, status="active")
        if self._management is not None and self._management.user_exists(broker_user(tenant_id)):
            self._management.grant_publisher(
                self._vhost, broker_user(tenant_id), self._topology.exchange, write_pattern(tenant_id)
            )

    async def _update(self, tenant_id: str, **values: object) -> Row[Any]:
        async with self.uow() as uow:
            statement = update(tenants).where(tenants.c.tenant_id == tenant_id).values(**values).returning(tenants)
            row = (await uow.connection.execute(statement)).one_or_none()
            if row is None:
                raise UnknownTenantError(f"unknown tenant {tenant_id!r}; see `remit tenants list`")
            await uow.commit()
        return row

    async def _route(self, row: Row[Any]) -> str:
        return await apply_route(self._connection, self._topology, Route(row.tenant_id, row.tier, row.dedicated_queue))

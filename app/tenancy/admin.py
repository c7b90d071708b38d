"""The tenants service: the one place `remit tenants ...` and the admin API's /admin/tenants routes change
tenants. The database record, the broker route and the tenant's RabbitMQ user change together; both entry
points only translate their arguments and print or serialise what comes back."""

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from aio_pika.abc import AbstractConnection

from app.errors import Conflict, NotFound, UnknownTenant, UsageError
from app.messaging.management import Management
from app.messaging.queues import ready_count
from app.messaging.topology import TIERS, Topology
from app.storage.ports.tenants import ACTIVE, DELETED, DRAINING, Tenant
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.broker_users import broker_user, legacy_user, new_password, write_pattern
from app.tenancy.deletion import Deletion, kept_until, refuse_if_draining, refuse_if_gone, refuse_unsettled
from app.tenancy.queues import delete_when_drained
from app.tenancy.routing import Route, apply_route
from app.tenancy.tenants import AddTenant, add_tenant, differences, list_tenants

DRAINED_QUEUE_TIMEOUT = 10.0  # a dedicated queue seen empty is deleted after two checks a moment apart


@dataclass(frozen=True, slots=True)
class Credentials:
    user: str
    password: str


@dataclass(frozen=True, slots=True)
class Added:
    created: bool
    tenant: Tenant
    credentials: Credentials | None  # a RabbitMQ user made now (a first add, or one an earlier add left undone)
    updated: tuple[str, ...] = ()  # what `update` changed on an existing tenant, as "tier basic -> premium"


@dataclass(frozen=True, slots=True)
class Rotation:
    """A tenant's new RabbitMQ login, and what became of a user still named the old, broker-wide way."""

    credentials: Credentials
    legacy_user: str | None = None  # `tenant-<id>`, found with rights in this deployment
    legacy_deleted: bool = False  # False: another deployment still uses it; only its rights here are gone


@dataclass(frozen=True, slots=True)
class TenantDefaults:
    """From Settings: what a tenant gets when nothing else is said."""

    ttl_seconds: int = 86_400  # REMIT_DEFAULT_TTL_SECONDS
    retention_days: int = 30  # REMIT_RETENTION_DAYS


class TenantAdmin:
    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        connection: AbstractConnection,
        topology: Topology,
        management: Management | None,
        vhost: str,
        defaults: TenantDefaults | None = None,
    ) -> None:
        self.uow = uow_factory
        self._connection = connection
        self._topology = topology
        self._management = management
        self._vhost = vhost
        self.defaults = defaults or TenantDefaults()

    async def all(self) -> list[Tenant]:
        return await list_tenants(self.uow)

    async def add(self, command: AddTenant, *, update: bool = False) -> Added:
        """Create the tenant, bind its routing key, and make its RabbitMQ user; idempotent. Adding an existing
        tenant with other options is refused naming them, or with `update` applies them. Whatever an earlier
        add left undone (its binding, its user when the management API was down) is done now."""
        new = replace(command, default_ttl_seconds=command.default_ttl_seconds or self.defaults.ttl_seconds)
        created = await add_tenant(new, self.uow)
        row = await self.show(command.tenant_id)
        updated: tuple[str, ...] = ()
        if not created:
            refuse_if_gone(row, self.defaults.retention_days)
            refuse_if_draining(row)
            row, updated = await self._reconcile(row, command, update)
        await self._route(row)
        return Added(created, row, await self._ensure_broker_user(row), updated)

    async def _reconcile(self, row: Tenant, asked: AddTenant, update: bool) -> tuple[Tenant, tuple[str, ...]]:
        changes = differences(row, asked)
        if not changes:
            return row, ()
        described = tuple(f"{field} {old} -> {new}" for field, (old, new) in changes.items())
        if not update:
            raise Conflict(
                f"tenant {row.tenant_id!r} exists with other options ({'; '.join(described)}); nothing was "
                "changed. To apply them, add it again asking for an update "
                '(`--update`, or `"update": true` over HTTP)'
            )
        values = {field: new for field, (_, new) in changes.items()}
        return await self._update(row.tenant_id, **values), described

    async def _ensure_broker_user(self, row: Tenant) -> Credentials | None:
        """Make the tenant's RabbitMQ user if it is missing (with rights only while the tenant is active)."""
        if self._management is None:
            return None
        user = broker_user(row.tenant_id, self._vhost)
        if self._management.user_exists(user):
            if row.status == ACTIVE:  # an earlier add may have made the user and stopped before its rights
                self._management.grant_publisher(
                    self._vhost, user, self._topology.exchange, write_pattern(row.tenant_id)
                )
            return None
        credentials = Credentials(user, new_password())
        if row.status == ACTIVE:
            self._management.provision_publisher(
                self._vhost, user, credentials.password, self._topology.exchange, write_pattern(row.tenant_id)
            )
        else:
            self._management.set_password(user, credentials.password)
        return credentials

    async def rotate_credentials(self, tenant_id: str) -> Rotation:
        """A new password for the tenant's RabbitMQ user (made if missing), to be shown once: the old one is
        refused from now on and the connections made with it are closed. A suspended tenant's user gets the
        password but no rights until `resume`. A user still named the old way is retired here."""
        management = self._require_management()
        row = await self._alive(tenant_id)
        credentials = Credentials(broker_user(tenant_id, self._vhost), new_password())
        management.set_password(credentials.user, credentials.password)
        if row.status == ACTIVE:
            management.grant_publisher(self._vhost, credentials.user, self._topology.exchange, write_pattern(tenant_id))
        management.close_connections(credentials.user)
        legacy = legacy_user(tenant_id)
        if self._vhost not in management.vhosts_of(legacy):
            return Rotation(credentials)
        return Rotation(credentials, legacy, management.retire_user(self._vhost, legacy))

    async def remove_broker_users(self, tenant_id: str) -> list[str]:
        """Delete the tenant's RabbitMQ user and retire one still named the old way, closing their
        connections; return the users deleted. Needs no tenant row and is harmless to repeat."""
        management = self._require_management()
        user, legacy = broker_user(tenant_id, self._vhost), legacy_user(tenant_id)
        removed: list[str] = [user] if management.delete_user(user) else []
        if self._vhost in management.vhosts_of(legacy) and management.retire_user(self._vhost, legacy):
            removed.append(legacy)
        return removed

    async def delete(self, tenant_id: str, *, confirm: bool = False, now: datetime | None = None) -> Deletion:
        """Phase 1: the tenant drains (app/tenancy/deletion.py). With `confirm`, phase 2 as well once nothing
        is left in flight: binding, dedicated queue and RabbitMQ user removed, records kept for the retention.
        Repeating either phase is harmless."""
        now = now or datetime.now(UTC)
        row = await self.show(tenant_id)
        if row.status == DELETED:
            return await self._deletion(row, now)
        if row.status != DRAINING:
            row = await self._update(tenant_id, status=DRAINING)
        self._revoke(tenant_id)
        state = await self._deletion(row, now)
        if not confirm:
            return state
        assert state.drain is not None
        refuse_unsettled(tenant_id, state.drain, state.queued)
        return await self._remove(row, now)

    async def deletion(self, tenant_id: str, now: datetime | None = None) -> Deletion | None:
        """How far the tenant's deletion is: None unless it is draining or deleted."""
        row = await self.show(tenant_id)
        return await self._deletion(row, now or datetime.now(UTC)) if row.status in (DRAINING, DELETED) else None

    async def deletion_of(self, tenant_id: str) -> Deletion:
        """The same, for a tenant that must be draining or deleted: an active tenant has no deletion (404)."""
        state = await self.deletion(tenant_id)
        if state is None:
            raise NotFound(f"tenant {tenant_id!r} is not being deleted: it has no deletion to show")
        return state

    async def _deletion(self, row: Tenant, now: datetime) -> Deletion:
        if row.status == DELETED:
            return Deletion(row, None, 0, kept_until=kept_until(row, self.defaults.retention_days))
        async with self.uow() as uow:
            drain = await uow.tenants.drain(row.tenant_id, now)
        return Deletion(row, drain, await self._queued(row.tenant_id))

    async def _remove(self, row: Tenant, now: datetime) -> Deletion:
        tenant_id = row.tenant_id
        # Unbound everywhere first (the tier queue is the target, so the dedicated one is not declared again).
        await apply_route(self._connection, self._topology, Route(tenant_id, row.tier, False, active=False))
        management = self._require_management()
        await delete_when_drained(
            self._connection, management, self._vhost, self._topology.dedicated_queue(tenant_id), DRAINED_QUEUE_TIMEOUT
        )
        removed = tuple(await self.remove_broker_users(tenant_id))
        async with self.uow() as uow:
            deleted = await uow.tenants.update(tenant_id, status=DELETED, deleted_at=now, dedicated_queue=False)
            revoked = await uow.tenants.revoke_api_keys(tenant_id, now)
            await uow.commit()
        assert deleted is not None, "a tenant is only erased once deleted"
        return Deletion(deleted, None, 0, removed, revoked, kept_until(deleted, self.defaults.retention_days))

    async def _queued(self, tenant_id: str) -> int:
        """Messages in the tenant's dedicated queue: ready ones asked of the queue itself (the management
        API's figures are seconds old), unacknowledged ones of the management API."""
        name = self._topology.dedicated_queue(tenant_id)
        ready = await ready_count(self._connection, name)
        if ready is None:
            return 0
        depth = self._management.queue_depths(self._vhost, [name]).get(name) if self._management else None
        return ready + (depth["messages_unacknowledged"] if depth else 0)

    def _require_management(self) -> Management:
        if self._management is None:
            raise UsageError("RabbitMQ users are managed through the management API: set REMIT_RABBITMQ_MANAGEMENT_URL")
        return self._management

    async def show(self, tenant_id: str) -> Tenant:
        async with self.uow() as uow:
            row = await uow.tenants.get(tenant_id)
        if row is None:
            raise UnknownTenant(f"unknown tenant {tenant_id!r}; see `remit tenants list`")
        return row

    async def _alive(self, tenant_id: str) -> Tenant:
        row = await self.show(tenant_id)
        refuse_if_gone(row, self.defaults.retention_days)
        return row

    async def set_tier(self, tenant_id: str, tier: str) -> str:
        """Move new traffic to the tier's queue; what is already queued is processed where it is."""
        if tier not in TIERS:
            raise UsageError(f"tier {tier!r} is not one of {', '.join(TIERS)}")
        await self._alive(tenant_id)
        return await self._route(await self._update(tenant_id, tier=tier))

    async def set_dedicated(self, tenant_id: str, dedicated: bool) -> str:
        await self._alive(tenant_id)
        return await self._route(await self._update(tenant_id, dedicated_queue=dedicated))

    async def set_limits(self, tenant_id: str, values: dict[str, int]) -> Tenant:
        row = await self._alive(tenant_id)
        return await self._update(tenant_id, **values) if values else row

    async def suspend(self, tenant_id: str) -> Tenant:
        """Refuse new batches and cut direct publishers off; payments already accepted still complete."""
        refuse_if_draining(await self._alive(tenant_id))
        row = await self._update(tenant_id, status="suspended")
        self._revoke(tenant_id)
        return row

    async def resume(self, tenant_id: str) -> Tenant:
        """Let a suspended tenant submit and publish again; for a draining one, cancel its deletion."""
        await self._alive(tenant_id)
        row = await self._update(tenant_id, status=ACTIVE)
        if self._management is not None and self._management.user_exists(broker_user(tenant_id, self._vhost)):
            self._management.grant_publisher(
                self._vhost, broker_user(tenant_id, self._vhost), self._topology.exchange, write_pattern(tenant_id)
            )
        return row

    def _revoke(self, tenant_id: str) -> None:
        if self._management is not None:
            self._management.revoke_publisher(self._vhost, broker_user(tenant_id, self._vhost))

    async def _update(self, tenant_id: str, **values: object) -> Tenant:
        async with self.uow() as uow:
            row = await uow.tenants.update(tenant_id, **values)
            if row is None:
                raise UnknownTenant(f"unknown tenant {tenant_id!r}; see `remit tenants list`")
            await uow.commit()
        return row

    async def _route(self, row: Tenant) -> str:
        return await apply_route(self._connection, self._topology, Route(row.tenant_id, row.tier, row.dedicated_queue))

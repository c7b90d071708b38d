"""A tenant's RabbitMQ user over its life, on the real broker: rotated (a new password shown once, the old
one refused from then on and its open connections closed), moved from the old broker-wide name
(`tenant-<id>`) to this deployment's (`tenant-<id>@<vhost>`), and removed."""

import asyncio
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator

import aio_pika
import aiormq
import aiormq.exceptions
import httpx
import pytest
from aio_pika.abc import AbstractConnection

from app.messaging.connection import connect, with_login
from app.messaging.topology import Topology
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.admin import Credentials, TenantAdmin
from app.tenancy.broker_users import broker_user, write_pattern
from app.tenancy.tenants import AddTenant
from tests.utils.admin import admin_client, admin_key, bearer, tenant_key
from tests.utils.factories import make_wire_dict, new_tenant_id
from tests.utils.services import (
    MANAGEMENT_AUTH,
    MANAGEMENT_URL,
    ROOT,
    ServiceEnv,
    create_vhost,
    delete_vhost,
    management,
)
from tests.utils.tenant_users import TenantPublisher

pytestmark = pytest.mark.integration
CLOSE_SECONDS = 10


@pytest.fixture
async def admin(settings: Settings, uow_factory: UnitOfWorkFactory, vhost: str) -> AsyncIterator[TenantAdmin]:
    connection = await connect(settings.amqp_url, "test-credentials")
    yield TenantAdmin(uow_factory, connection, Topology.from_settings(settings), management(), vhost)
    await connection.close()


@pytest.fixture
def users() -> Iterator[list[str]]:
    """RabbitMQ users a test made: users are broker-wide, so they are deleted whatever the test did."""
    made: list[str] = []
    yield made
    with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH) as client:
        for user in made:
            client.delete(f"/api/users/{user}")


async def _added(admin: TenantAdmin, vhost: str, users: list[str], name: str) -> tuple[str, Credentials]:
    """A new tenant made as `remit tenants add` makes it, with the credentials it printed once."""
    tenant = new_tenant_id()
    users.append(broker_user(tenant, vhost))
    credentials = (await admin.add(AddTenant(tenant, name, default_ttl_seconds=86_400))).credentials
    assert credentials is not None
    return tenant, credentials


async def _publish(settings: Settings, vhost: str, tenant: str, password: str) -> None:
    """Publish a payment as the tenant's own user; returns once the broker confirmed it."""
    await TenantPublisher(settings.amqp_url, vhost, tenant, password).publish(make_wire_dict(tenant_id=tenant))


async def _login(settings: Settings, user: str, password: str, vhost_url: str | None = None) -> AbstractConnection:
    return await aio_pika.connect(with_login(vhost_url or settings.amqp_url, user, password))


def _closed(connection: AbstractConnection) -> asyncio.Event:
    closed = asyncio.Event()
    connection.close_callbacks.add(lambda *_: closed.set())
    return closed


async def _refused(settings: Settings, user: str, password: str) -> bool:
    # aiormq's own login: the connection object aio-pika builds for a refused login schedules a close from its
    # `__del__` that nobody awaits (a RuntimeWarning in whichever test the collector happens to run in).
    try:
        connection = await aiormq.connect(with_login(settings.amqp_url, user, password))
    except aiormq.exceptions.ProbableAuthenticationError:
        return True
    await connection.close()
    return False


def _permissions(user: str) -> set[str]:
    """The vhosts in which the user has rights."""
    with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH) as client:
        response = client.get(f"/api/users/{user}/permissions")
    return {p["vhost"] for p in response.json()} if response.status_code == 200 else set()


async def test_rotation_refuses_the_old_password_and_closes_its_open_connections(
    admin: TenantAdmin, settings: Settings, vhost: str, users: list[str]
) -> None:
    tenant, first = await _added(admin, vhost, users, "Rotating")
    open_before = await _login(settings, first.user, first.password)
    closed = _closed(open_before)

    rotation = await admin.rotate_credentials(tenant)

    assert rotation.credentials.user == first.user == broker_user(tenant, vhost)
    assert rotation.credentials.password != first.password
    assert len(rotation.credentials.password) >= 24
    await asyncio.wait_for(closed.wait(), CLOSE_SECONDS)
    assert await _refused(settings, first.user, first.password)
    await _publish(settings, vhost, tenant, rotation.credentials.password)  # the new one works


async def test_a_suspended_tenant_rotated_gets_a_password_but_no_right_until_resumed(
    admin: TenantAdmin, settings: Settings, vhost: str, users: list[str]
) -> None:
    tenant, _ = await _added(admin, vhost, users, "Suspended")
    await admin.suspend(tenant)
    rotation = await admin.rotate_credentials(tenant)
    assert _permissions(rotation.credentials.user) == set()
    await admin.resume(tenant)
    assert _permissions(rotation.credentials.user) == {vhost}
    await _publish(settings, vhost, tenant, rotation.credentials.password)


async def test_suspending_closes_even_a_connection_opened_a_moment_before(
    admin: TenantAdmin, settings: Settings, vhost: str, users: list[str]
) -> None:
    """RabbitMQ keeps the rights it cached for an open channel: a suspension must close the connections."""
    tenant, credentials = await _added(admin, vhost, users, "Suspended at once")
    connection = await _login(settings, credentials.user, credentials.password)
    closed = _closed(connection)
    await admin.suspend(tenant)
    await asyncio.wait_for(closed.wait(), CLOSE_SECONDS)


async def test_rotation_moves_a_legacy_user_to_the_deployments_name_and_deletes_the_old_one(
    admin: TenantAdmin, settings: Settings, vhost: str, users: list[str]
) -> None:
    tenant = new_tenant_id()
    legacy = f"tenant-{tenant}"  # how users were named before they carried the vhost
    users.extend([legacy, broker_user(tenant, vhost)])
    await admin.add(AddTenant(tenant, "Upgraded", default_ttl_seconds=86_400))
    management().delete_user(broker_user(tenant, vhost))  # an existing deployment has only the legacy user
    management().provision_publisher(vhost, legacy, "legacy-password", "payments", write_pattern(tenant))
    legacy_connection = await _login(settings, legacy, "legacy-password")
    closed = _closed(legacy_connection)

    rotation = await admin.rotate_credentials(tenant)

    assert rotation.credentials.user == broker_user(tenant, vhost)
    assert (rotation.legacy_user, rotation.legacy_deleted) == (legacy, True)
    assert not management().user_exists(legacy)
    await asyncio.wait_for(closed.wait(), CLOSE_SECONDS)
    assert await _refused(settings, legacy, "legacy-password")
    await _publish(settings, vhost, tenant, rotation.credentials.password)


async def test_a_legacy_user_that_another_deployment_still_uses_keeps_its_rights_there(
    admin: TenantAdmin, settings: Settings, vhost: str, users: list[str]
) -> None:
    tenant, other = new_tenant_id(), create_vhost()
    legacy = f"tenant-{tenant}"
    users.extend([legacy, broker_user(tenant, vhost)])
    try:
        await admin.add(AddTenant(tenant, "Shared", default_ttl_seconds=86_400))
        for deployment in (vhost, other):  # the old names made one user serve both deployments
            management().provision_publisher(deployment, legacy, "legacy-password", "payments", write_pattern(tenant))
        here = await _login(settings, legacy, "legacy-password")
        there = await _login(settings, legacy, "legacy-password", settings.amqp_url.rsplit("/", 1)[0] + f"/{other}")
        closed_here, closed_there = _closed(here), _closed(there)

        rotation = await admin.rotate_credentials(tenant)

        assert (rotation.legacy_user, rotation.legacy_deleted) == (legacy, False)
        assert _permissions(legacy) == {other}
        await asyncio.wait_for(closed_here.wait(), CLOSE_SECONDS)
        await asyncio.sleep(1.0)
        assert not closed_there.is_set()
        await there.close()
    finally:
        delete_vhost(other)


async def test_removing_a_tenants_broker_users_deletes_them_and_closes_their_connections(
    admin: TenantAdmin, settings: Settings, vhost: str, users: list[str]
) -> None:
    tenant, credentials = await _added(admin, vhost, users, "Leaving")
    legacy = f"tenant-{tenant}"
    users.append(legacy)
    management().provision_publisher(vhost, legacy, "legacy-password", "payments", write_pattern(tenant))
    connections = [
        await _login(settings, credentials.user, credentials.password),
        await _login(settings, legacy, "legacy-password"),
    ]
    closed = [_closed(c) for c in connections]

    assert await admin.remove_broker_users(tenant) == [credentials.user, legacy]

    for event in closed:
        await asyncio.wait_for(event.wait(), CLOSE_SECONDS)
    assert not management().user_exists(credentials.user)
    assert not management().user_exists(legacy)
    assert await _refused(settings, credentials.user, credentials.password)
    assert await admin.remove_broker_users(tenant) == []  # nothing left: removing again is harmless


async def test_remit_tenants_rotate_credentials_prints_the_new_password_once(
    admin: TenantAdmin, service_env: ServiceEnv, settings: Settings, vhost: str, users: list[str]
) -> None:
    tenant, first = await _added(admin, vhost, users, "From the CLI")
    done = await _remit(service_env, "tenants", "rotate-credentials", tenant)
    assert done.returncode == 0, done.stderr
    match = re.search(rf"user {re.escape(first.user)} password (\S+)", done.stdout)
    assert match is not None, done.stdout
    assert await _refused(settings, first.user, first.password)
    await (await _login(settings, first.user, match.group(1))).close()

    refused = await _remit(service_env, "tenants", "rotate-credentials", "no-such-tenant")
    assert refused.returncode == 2
    assert "unknown tenant" in refused.stderr


async def _remit(service_env: ServiceEnv, *args: str) -> subprocess.CompletedProcess[str]:
    """`remit ...` as an operator runs it, in its own process."""
    command = [sys.executable, "-m", "app.cli", *args]
    return await asyncio.to_thread(
        subprocess.run, command, env=service_env.env(), cwd=ROOT, capture_output=True, text=True, timeout=60
    )


async def test_the_admin_api_rotates_for_admin_keys_only(
    admin: TenantAdmin, settings: Settings, uow_factory: UnitOfWorkFactory, vhost: str, users: list[str]
) -> None:
    tenant, first = await _added(admin, vhost, users, "Over HTTP")
    operator = bearer(await admin_key(uow_factory))
    async with admin_client(settings) as client:
        path = f"/admin/tenants/{tenant}/rotate-credentials"
        own = await client.post(path, headers=bearer(await tenant_key(uow_factory, tenant)))
        assert own.status_code == 403
        assert not await _refused(settings, first.user, first.password)  # a refused call changed nothing

        response = await client.post(path, headers=operator)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["credentials"]["user"] == first.user
        assert await _refused(settings, first.user, first.password)
        await (await _login(settings, first.user, body["credentials"]["password"])).close()
        missing = await client.post("/admin/tenants/no-such-tenant/rotate-credentials", headers=operator)
        assert missing.status_code == 404

"""A tenant's life on the real broker and database: deleted in two phases (drain, then remove its RabbitMQ
user, binding and dedicated queue, keeping its records until the purge erases them), its byte quota, and
`tenants add` that tells the truth and completes what a failed earlier run left undone."""

import asyncio
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path

import aio_pika
import httpx
import pytest
from sqlalchemy import func, select, text

from app.errors import BatchRefused, Conflict, LimitExceeded, TenantNotDrained
from app.messaging.connection import connect
from app.messaging.topology import Topology
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.tables import tenants
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.admin import Credentials, TenantAdmin
from app.tenancy.broker_users import broker_user
from app.tenancy.deletion import erase_deleted_tenants
from app.tenancy.tenants import AddTenant
from tests.utils.admin import admin_client, admin_key, bearer, tenant_key
from tests.utils.factories import make_wire_dict, new_tenant_id
from tests.utils.services import (
    MANAGEMENT_AUTH,
    MANAGEMENT_URL,
    ROOT,
    ServiceEnv,
    ServiceProcess,
    eventually,
    management,
)
from tests.utils.tenant_users import TenantPublisher
from tests.utils.world import ledger_rows_for_tenant, payment_row, write_csv

pytestmark = pytest.mark.integration


@pytest.fixture
async def admin(settings: Settings, uow_factory: UnitOfWorkFactory, vhost: str) -> AsyncIterator[TenantAdmin]:
    connection = await connect(settings.amqp_url, "test-lifecycle")
    yield TenantAdmin(uow_factory, connection, Topology.from_settings(settings), management(), vhost)
    await connection.close()


@pytest.fixture
def users() -> Iterator[list[str]]:
    """RabbitMQ users are broker-wide: the ones a test made are deleted whatever it did."""
    made: list[str] = []
    yield made
    with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH) as client:
        for user in made:
            client.delete(f"/api/users/{user}")


async def _added(admin: TenantAdmin, vhost: str, users: list[str]) -> tuple[str, Credentials]:
    tenant = new_tenant_id()
    users.append(broker_user(tenant, vhost))
    credentials = (await admin.add(AddTenant(tenant, f"Tenant {tenant}"))).credentials
    assert credentials is not None
    return tenant, credentials


def _bindings(vhost: str, tenant: str) -> list[str]:
    """The queues the tenant's routing key is bound to on the payments exchange."""
    with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH) as client:
        response = client.get(f"/api/exchanges/{vhost}/payments/bindings/source")
    response.raise_for_status()
    return [b["destination"] for b in response.json() if b["routing_key"] == f"{tenant}.payment"]


async def _status(uow: UnitOfWorkFactory, tenant: str) -> str | None:
    async with uow() as u:
        return (await u.connection.execute(select(tenants.c.status).where(tenants.c.tenant_id == tenant))).scalar()


async def _submit(settings: Settings, uow: UnitOfWorkFactory, tenant: str, path: Path, n: int) -> int:
    rows = [payment_row(i) for i in range(n)]
    return (await submit_batch(SubmitBatch(tenant, write_csv(path, rows)), uow, settings)).accepted


async def test_a_tenant_is_deleted_in_two_phases_and_its_records_outlive_it(
    admin: TenantAdmin,
    settings: Settings,
    uow_factory: UnitOfWorkFactory,
    service_env: ServiceEnv,
    vhost: str,
    users: list[str],
    logs_dir: Path,
    tmp_path: Path,
) -> None:
    tenant, credentials = await _added(admin, vhost, users)
    publisher = TenantPublisher(settings.amqp_url, vhost, tenant, credentials.password)
    await publisher.publish(make_wire_dict(tenant_id=tenant))  # allowed while active (nobody consumes it yet)
    assert await _submit(settings, uow_factory, tenant, tmp_path / "a.csv", 5) == 5  # the relay is not running

    draining = await admin.delete(tenant)

    assert draining.tenant.status == "draining"
    assert not draining.deleted
    assert draining.drain is not None
    assert (draining.drain.in_flight.payments, draining.drain.unpublished) == (5, 5)
    # The attack: the tenant's own user publishes directly after phase 1; the broker refuses it.
    with pytest.raises(aio_pika.exceptions.AMQPException):
        await publisher.publish(make_wire_dict(tenant_id=tenant))
    with pytest.raises(BatchRefused, match=f"tenant '{tenant}' is being deleted"):
        await _submit(settings, uow_factory, tenant, tmp_path / "b.csv", 1)
    with pytest.raises(TenantNotDrained, match=r"5 payment\(s\) in flight, 5 not yet published"):
        await admin.delete(tenant, confirm=True)
    assert management().user_exists(credentials.user)
    assert _bindings(vhost, tenant) == ["payments.work.basic"]  # what was accepted still reaches its queue

    relay = ServiceProcess.relay(service_env.env(), logs_dir / "relay.log")
    consumer = ServiceProcess.consumer(service_env.env(), logs_dir / "consumer.log")
    try:

        async def drained() -> bool:
            return len(await ledger_rows_for_tenant(uow_factory, tenant)) == 5

        await eventually(drained, timeout=90)
    finally:
        relay.stop()
        consumer.stop()

    deleted = await admin.delete(tenant, confirm=True)

    assert deleted.deleted
    assert deleted.tenant.deleted_at is not None
    assert deleted.removed_users == (credentials.user,)
    assert not management().user_exists(credentials.user)
    assert _bindings(vhost, tenant) == []
    assert len(await ledger_rows_for_tenant(uow_factory, tenant)) == 5  # kept for the retention
    assert deleted.kept_until == deleted.tenant.deleted_at + timedelta(days=30)
    assert (await admin.delete(tenant, confirm=True)).deleted  # asking again is harmless
    with pytest.raises(Conflict, match="was deleted on"):
        await admin.add(AddTenant(tenant, "Again"))
    with pytest.raises(Conflict, match="was deleted on"):
        await admin.resume(tenant)

    at = deleted.tenant.deleted_at
    await erase_deleted_tenants(uow_factory, 30, at + timedelta(days=29))
    assert await _status(uow_factory, tenant) == "deleted"  # not yet: its retention runs from the deletion
    erased = await erase_deleted_tenants(uow_factory, 30, at + timedelta(days=30, seconds=1))
    assert tenant in erased.tenants
    assert erased.rows["ledger"] >= 5
    assert erased.rows["batches"] >= 1
    assert await _status(uow_factory, tenant) is None
    assert await ledger_rows_for_tenant(uow_factory, tenant) == []


async def test_phase_two_waits_for_a_dedicated_queue_to_be_empty_and_then_deletes_it(
    admin: TenantAdmin, settings: Settings, vhost: str, users: list[str]
) -> None:
    tenant, credentials = await _added(admin, vhost, users)
    queue = await admin.set_dedicated(tenant, True)
    await TenantPublisher(settings.amqp_url, vhost, tenant, credentials.password).publish(
        make_wire_dict(tenant_id=tenant)
    )
    await admin.delete(tenant)
    with pytest.raises(TenantNotDrained, match=r"1 message\(s\) in its dedicated queue"):
        await admin.delete(tenant, confirm=True)
    connection = await connect(settings.amqp_url, "test-lifecycle-drain")
    try:
        channel = await connection.channel()
        await (await channel.get_queue(queue)).purge()  # as if its pool had processed it
        deleted = await admin.delete(tenant, confirm=True)
        assert deleted.deleted
        assert queue not in management().queue_depths(vhost, [queue])
    finally:
        await connection.close()


async def test_resume_cancels_a_deletion_in_phase_one(
    admin: TenantAdmin, settings: Settings, vhost: str, users: list[str]
) -> None:
    tenant, credentials = await _added(admin, vhost, users)
    await admin.delete(tenant)
    assert (await admin.resume(tenant)).status == "active"
    await TenantPublisher(settings.amqp_url, vhost, tenant, credentials.password).publish(
        make_wire_dict(tenant_id=tenant)
    )


async def test_a_batch_past_the_byte_quota_is_refused_whole_with_the_numbers(
    admin: TenantAdmin, settings: Settings, uow_factory: UnitOfWorkFactory, vhost: str, users: list[str], tmp_path: Path
) -> None:
    tenant, _ = await _added(admin, vhost, users)
    await admin.set_limits(tenant, {"max_bytes_in_flight": 4_000})  # a payment message is ~550 bytes
    assert await _submit(settings, uow_factory, tenant, tmp_path / "a.csv", 4) == 4
    with pytest.raises(
        LimitExceeded, match=r"has \d+ bytes of payments in flight; \d+ more would pass its quota of 4000"
    ):
        await _submit(settings, uow_factory, tenant, tmp_path / "b.csv", 5)
    async with uow_factory() as u:
        count = select(func.count()).select_from(text("outbox")).where(text("tenant_id = :t"))
        assert (await u.connection.execute(count, {"t": tenant})).scalar_one() == 4  # nothing of the refused one


async def test_the_admin_api_deletes_in_two_phases_for_admin_keys_only(
    admin: TenantAdmin, settings: Settings, uow_factory: UnitOfWorkFactory, vhost: str, users: list[str]
) -> None:
    tenant, _ = await _added(admin, vhost, users)
    operator = bearer(await admin_key(uow_factory))
    async with admin_client(settings) as client:
        path = f"/admin/tenants/{tenant}"
        own = bearer(await tenant_key(uow_factory, tenant))
        assert (await client.delete(path, headers=own)).status_code == 403
        assert await _status(uow_factory, tenant) == "active"

        not_yet = await client.get(f"{path}/deletion", headers=operator)
        assert not_yet.status_code == 404
        phase_one = await client.delete(path, headers=operator)
        assert phase_one.status_code == 200, phase_one.text
        assert phase_one.json()["tenant"]["status"] == "draining"
        assert phase_one.json()["drain"]["in_flight_payments"] == 0
        watched = await client.get(f"{path}/deletion", headers=operator)
        assert watched.status_code == 200
        assert watched.json()["drain"] == phase_one.json()["drain"]

        phase_two = await client.delete(path, params={"confirm": "true"}, headers=operator)
        assert phase_two.status_code == 200, phase_two.text
        assert phase_two.json()["deleted"] is True
        assert phase_two.json()["removed_users"] == [broker_user(tenant, vhost)]
        assert phase_two.json()["revoked_keys"] == 1
        assert (await client.get("/v1/batches", headers=own)).status_code == 401  # a former customer reads nothing
        listed = await client.get("/admin/tenants", headers=operator)
        assert next(t for t in listed.json() if t["tenant_id"] == tenant)["status"] == "deleted"


async def test_the_admin_api_refuses_an_add_with_other_options_unless_told_to_update(
    admin: TenantAdmin, settings: Settings, uow_factory: UnitOfWorkFactory, vhost: str, users: list[str]
) -> None:
    tenant, _ = await _added(admin, vhost, users)
    operator = bearer(await admin_key(uow_factory))
    body = {"tenant_id": tenant, "name": f"Tenant {tenant}", "tier": "premium"}
    async with admin_client(settings) as client:
        refused = await client.post("/admin/tenants", json=body, headers=operator)
        assert refused.status_code == 409, refused.text
        assert "tier basic -> premium" in refused.text
        assert (await admin.show(tenant)).tier == "basic"
        same = await client.post(
            "/admin/tenants", json={"tenant_id": tenant, "name": f"Tenant {tenant}"}, headers=operator
        )
        assert same.status_code == 200
        assert same.json()["credentials"] is None
        updated = await client.post("/admin/tenants", json={**body, "update": True}, headers=operator)
        assert updated.status_code == 200, updated.text
        assert updated.json()["updated"] == ["tier basic -> premium"]
        assert updated.json()["tenant"]["tier"] == "premium"
    assert _bindings(vhost, tenant) == ["payments.work.premium"]


async def test_adding_again_gives_a_user_that_an_earlier_add_left_without_rights_its_rights(
    admin: TenantAdmin, settings: Settings, vhost: str, users: list[str]
) -> None:
    tenant, credentials = await _added(admin, vhost, users)
    management().revoke_publisher(vhost, credentials.user)  # as if an earlier add stopped before the rights
    publisher = TenantPublisher(settings.amqp_url, vhost, tenant, credentials.password)
    with pytest.raises(aio_pika.exceptions.AMQPException):
        await publisher.publish(make_wire_dict(tenant_id=tenant))

    again = await admin.add(AddTenant(tenant, f"Tenant {tenant}"))

    assert again.credentials is None  # the user existed: its password is the one shown before
    await publisher.publish(make_wire_dict(tenant_id=tenant))


async def _remit(service_env: ServiceEnv, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "app.cli", *args]
    return await asyncio.to_thread(
        subprocess.run, command, env=service_env.env(**env), cwd=ROOT, capture_output=True, text=True, timeout=90
    )


async def test_tenants_add_again_completes_what_a_run_without_the_management_api_left_undone(
    service_env: ServiceEnv, settings: Settings, uow_factory: UnitOfWorkFactory, vhost: str, users: list[str]
) -> None:
    tenant = new_tenant_id()
    user = broker_user(tenant, vhost)
    users.append(user)
    unreachable = {"REMIT_RABBITMQ_MANAGEMENT_URL": "http://guest:guest@127.0.0.1:9"}

    broken = await _remit(service_env, "tenants", "add", tenant, "--name", "Half made", **unreachable)
    assert broken.returncode == 75, broken.stdout + broken.stderr
    assert await _status(uow_factory, tenant) == "active"  # the record was written, the user was not
    assert not management().user_exists(user)

    completed = await _remit(service_env, "tenants", "add", tenant, "--name", "Half made")
    assert completed.returncode == 0, completed.stderr
    assert "already exists" in completed.stdout
    assert "was missing" in completed.stdout
    match = re.search(rf"user {re.escape(user)} password (\S+)", completed.stdout)
    assert match is not None, completed.stdout
    await TenantPublisher(settings.amqp_url, vhost, tenant, match.group(1)).publish(make_wire_dict(tenant_id=tenant))

    again = await _remit(service_env, "tenants", "add", tenant, "--name", "Half made")
    assert again.returncode == 0
    assert "password" not in again.stdout

    other_tier = await _remit(service_env, "tenants", "add", tenant, "--name", "Half made", "--tier", "premium")
    assert other_tier.returncode == 2
    assert "tier basic -> premium" in other_tier.stderr
    assert "nothing was changed" in other_tier.stderr
    updated = await _remit(service_env, "tenants", "add", tenant, "--name", "Renamed", "--tier", "premium", "--update")
    assert updated.returncode == 0, updated.stderr
    assert "name Half made -> Renamed; tier basic -> premium" in updated.stdout
    assert _bindings(vhost, tenant) == ["payments.work.premium"]


async def test_remit_tenants_delete_prints_each_phase_and_exits_75_while_payments_are_in_flight(
    service_env: ServiceEnv,
    settings: Settings,
    uow_factory: UnitOfWorkFactory,
    vhost: str,
    users: list[str],
    tmp_path: Path,
) -> None:
    tenant = new_tenant_id()
    users.append(broker_user(tenant, vhost))
    assert (await _remit(service_env, "tenants", "add", tenant, "--name", "Leaving")).returncode == 0
    await _submit(settings, uow_factory, tenant, tmp_path / "a.csv", 2)

    phase_one = await _remit(service_env, "tenants", "delete", tenant)
    assert phase_one.returncode == 0, phase_one.stderr
    assert f"tenant {tenant} is draining: in flight 2 payments" in phase_one.stdout
    refused = await _remit(service_env, "tenants", "delete", tenant, "--confirm")
    assert refused.returncode == 75
    assert "2 payment(s) in flight" in refused.stderr
    shown = await _remit(service_env, "tenants", "show", tenant)
    assert "draining" in shown.stdout
    assert "not yet published" in shown.stdout
    listed = await _remit(service_env, "tenants", "list")
    assert re.search(rf"{tenant}\s.*draining", listed.stdout)


async def test_remit_submit_uses_the_default_tenant_of_a_one_customer_install(
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    admin: TenantAdmin,
    vhost: str,
    users: list[str],
    tmp_path: Path,
) -> None:
    tenant, _ = await _added(admin, vhost, users)
    path = write_csv(tmp_path / "one.csv", [payment_row(1)])
    nameless = await _remit(service_env, "submit", str(path))
    assert nameless.returncode == 2
    assert "--tenant" in nameless.stderr
    assert "REMIT_DEFAULT_TENANT" in nameless.stderr
    done = await _remit(service_env, "submit", str(path), REMIT_DEFAULT_TENANT=tenant)
    assert done.returncode == 0, done.stderr
    assert f"for tenant {tenant}" in done.stdout

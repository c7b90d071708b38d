"""Tiers, pools, dedicated queues, suspension and limits on the real broker and database."""

import asyncio
from pathlib import Path

import aio_pika
import aio_pika.exceptions
import pytest
from sqlalchemy import text

from app.errors import BatchRefused, LimitExceeded
from app.messaging.connection import connect, vhost_of
from app.messaging.topology import Topology
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.admin import TenantAdmin
from app.tenancy.pool_operations import pool_status, set_desired_state
from app.tenancy.queues import delete_when_drained
from tests.utils.dead_letters import queue_depth_now
from tests.utils.factories import make_wire_dict
from tests.utils.services import ServiceProcess, eventually, management
from tests.utils.world import fresh_tenant, ledger_rows_for_tenant, payment_row, send_payment, write_csv

pytestmark = pytest.mark.integration
MGMT = management()


async def _admin(settings: Settings, uow: UnitOfWorkFactory) -> tuple[TenantAdmin, aio_pika.abc.AbstractConnection]:
    connection = await connect(settings.amqp_url, "test-tenancy")
    return TenantAdmin(uow, connection, Topology.from_settings(settings), MGMT, vhost_of(settings.amqp_url)), connection


async def _send(settings: Settings, tenant: str, n: int) -> list[str]:
    wires = [make_wire_dict(tenant_id=tenant) for _ in range(n)]
    for wire in wires:
        await send_payment(settings, wire)
    return [w["message_id"] for w in wires]


async def _pool_running(uow: UnitOfWorkFactory, settings: Settings, pool: str) -> int | None:
    """Running workers of the pool, or None while no consumer process has reported it yet."""
    rows = await pool_status(uow, MGMT, Topology.from_settings(settings), vhost_of(settings.amqp_url), None)
    row = next(r for r in rows if r.pool == pool)
    return row.running if row.processes else None


async def test_a_tier_change_keeps_every_in_flight_message(
    uow_factory: UnitOfWorkFactory, settings: Settings, consumer: ServiceProcess
) -> None:
    topology = Topology.from_settings(settings)
    tenant = await fresh_tenant(uow_factory, tier="basic")
    await set_desired_state(uow_factory, ["basic"], "stopped", "test")

    async def basic_stopped() -> bool:
        return await _pool_running(uow_factory, settings, "basic") == 0

    await eventually(basic_stopped, timeout=20)
    before = await _send(settings, tenant, 20)  # they wait in the basic queue: nobody consumes it
    assert await queue_depth_now(settings.amqp_url, topology.tier_queue("basic")) == 20
    admin, connection = await _admin(settings, uow_factory)
    try:
        assert await admin.set_tier(tenant, "premium") == topology.tier_queue("premium")
    finally:
        await connection.close()
    after = await _send(settings, tenant, 20)

    async def premium_done() -> bool:
        return len(await ledger_rows_for_tenant(uow_factory, tenant)) == 20

    try:
        await eventually(premium_done, timeout=30)
    except AssertionError:
        status = await pool_status(uow_factory, MGMT, topology, vhost_of(settings.amqp_url), None)
        depths = {t: await queue_depth_now(settings.amqp_url, topology.tier_queue(t)) for t in ("basic", "premium")}
        booked_now = len(await ledger_rows_for_tenant(uow_factory, tenant))
        raise AssertionError(f"depths {depths} booked {booked_now} pools: {status}") from None
    booked = {str(r.message_id) for r in await ledger_rows_for_tenant(uow_factory, tenant)}
    assert booked == set(after)  # the premium pool took the new ones; the old ones still wait, unlost
    await set_desired_state(uow_factory, ["basic"], "running", "test")

    async def all_done() -> bool:
        return len(await ledger_rows_for_tenant(uow_factory, tenant)) == 40

    await eventually(all_done, timeout=30)
    rows = await ledger_rows_for_tenant(uow_factory, tenant)
    assert {str(r.message_id) for r in rows} == set(before) | set(after)
    assert len(rows) == len({r.message_id for r in rows})


async def test_worker_status_is_scoped_to_the_tenants_tier(
    uow_factory: UnitOfWorkFactory, settings: Settings, consumer: ServiceProcess
) -> None:
    tenant = await fresh_tenant(uow_factory, tier="premium")
    topology, vhost = Topology.from_settings(settings), vhost_of(settings.amqp_url)

    async def reported() -> bool:
        return await _pool_running(uow_factory, settings, "premium") == settings.tier_workers["premium"]

    await eventually(reported, timeout=20)
    mine = await pool_status(uow_factory, MGMT, topology, vhost, tenant)
    assert [r.pool for r in mine] == ["premium"]
    everything = await pool_status(uow_factory, MGMT, topology, vhost, None)
    assert {r.pool for r in everything} >= {"free", "basic", "premium", "enterprise"}
    assert {r.pool: r.workers for r in everything}["enterprise"] == settings.tier_workers["enterprise"]


async def test_a_dedicated_queue_serves_the_tenant_and_is_deleted_only_when_drained(
    uow_factory: UnitOfWorkFactory, settings: Settings, consumer: ServiceProcess
) -> None:
    tenant = await fresh_tenant(uow_factory, tier="enterprise")
    admin, connection = await _admin(settings, uow_factory)
    try:
        queue = await admin.set_dedicated(tenant, True)
        assert queue == f"payments.work.tenant.{tenant}"
        ids = await _send(settings, tenant, 5)

        async def booked() -> bool:
            return len(await ledger_rows_for_tenant(uow_factory, tenant)) == 5

        await eventually(booked, timeout=30)
        assert {str(r.message_id) for r in await ledger_rows_for_tenant(uow_factory, tenant)} == set(ids)
        assert await admin.set_dedicated(tenant, False) == "payments.work.enterprise"
        await delete_when_drained(connection, MGMT, vhost_of(settings.amqp_url), queue, timeout=30)
        with pytest.raises(aio_pika.exceptions.ChannelNotFoundEntity):
            await (await connection.channel()).declare_queue(queue, passive=True)
    finally:
        await connection.close()


async def test_a_suspended_tenant_is_refused_at_submit(
    uow_factory: UnitOfWorkFactory, settings: Settings, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    admin, connection = await _admin(settings, uow_factory)
    try:
        await admin.suspend(tenant)
    finally:
        await connection.close()
    with pytest.raises(BatchRefused, match="is suspended"):
        await submit_batch(SubmitBatch(tenant, write_csv(tmp_path / "b.csv", [payment_row(1)])), uow_factory, settings)


async def _set(uow: UnitOfWorkFactory, tenant: str, column: str, value: int) -> None:
    async with uow() as u:
        await u.connection.execute(
            text(f"UPDATE tenants SET {column} = :v WHERE tenant_id = :t"), {"v": value, "t": tenant}
        )
        await u.commit()


async def test_the_publish_rate_limit_refuses_with_retry_after(
    uow_factory: UnitOfWorkFactory, settings: Settings, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    await _set(uow_factory, tenant, "publish_rate_per_second", 1)  # a bucket of 60 payments
    first = write_csv(tmp_path / "a.csv", [payment_row(n) for n in range(50)])
    assert (await submit_batch(SubmitBatch(tenant, first), uow_factory, settings)).accepted == 50
    second = write_csv(tmp_path / "b.csv", [payment_row(100 + n) for n in range(30)])
    with pytest.raises(LimitExceeded, match="over its publish rate") as refused:
        await submit_batch(SubmitBatch(tenant, second), uow_factory, settings)
    assert 15 <= refused.value.retry_after <= 25  # 20 more tokens at 1/s
    too_big = write_csv(tmp_path / "c.csv", [payment_row(200 + n) for n in range(61)])
    with pytest.raises(LimitExceeded, match="split the file"):
        await submit_batch(SubmitBatch(tenant, too_big), uow_factory, settings)


async def test_the_in_flight_limit_and_the_message_size_limit(
    uow_factory: UnitOfWorkFactory, settings: Settings, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    await _set(uow_factory, tenant, "max_in_flight", 10)
    await submit_batch(
        SubmitBatch(tenant, write_csv(tmp_path / "a.csv", [payment_row(n) for n in range(8)])), uow_factory, settings
    )
    with pytest.raises(LimitExceeded, match="8 payments in flight; 3 more"):
        await submit_batch(
            SubmitBatch(tenant, write_csv(tmp_path / "b.csv", [payment_row(10 + n) for n in range(3)])),
            uow_factory,
            settings,
        )
    other = await fresh_tenant(uow_factory)
    await _set(uow_factory, other, "max_message_bytes", 512)  # every payment message is ~600 bytes
    with pytest.raises(BatchRefused, match="no valid payment in the file"):
        await submit_batch(SubmitBatch(other, write_csv(tmp_path / "c.csv", [payment_row(50)])), uow_factory, settings)


async def test_publishes_for_other_tenants_never_reach_a_tenants_ledger(
    uow_factory: UnitOfWorkFactory, settings: Settings, consumer: ServiceProcess
) -> None:
    tenants = [await fresh_tenant(uow_factory, tier=t) for t in ("free", "basic", "premium")]
    sent = {t: await _send(settings, t, 5) for t in tenants}

    async def all_booked() -> bool:
        counts = [len(await ledger_rows_for_tenant(uow_factory, t)) for t in tenants]
        return counts == [5, 5, 5]

    await eventually(all_booked, timeout=30)
    await asyncio.sleep(0.5)
    for tenant in tenants:
        assert {str(r.message_id) for r in await ledger_rows_for_tenant(uow_factory, tenant)} == set(sent[tenant])

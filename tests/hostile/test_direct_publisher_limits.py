"""A tenant's publish rate, in-flight limit, byte quota and status hold for what it publishes directly over AMQP, not
only for batches: over a limit, its own publishes are dead-lettered `over_limit` (nothing is lost, nothing
waits in front of other tenants); a suspended tenant's are dead-lettered `tenant_suspended`. Payments
remit itself published (the relay) were admitted at ingress and are never charged again.

The byte bucket makes exact boundaries possible: a rate of 10 bytes/s is a bucket of 600 bytes that
refills a byte every 100 ms, far slower than these tests.
"""

from pathlib import Path

import pytest
from aio_pika.abc import AbstractChannel
from sqlalchemy import text

from app.messaging import headers
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.factories import make_wire_dict, padded_body, to_wire_bytes
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import (
    booked_once,
    dead_letters,
    fresh_tenant,
    ledger_count,
    payment_row,
    send_payment,
    write_csv,
)

pytestmark = pytest.mark.integration


async def _set(uow: UnitOfWorkFactory, tenant: str, **values: object) -> None:
    assignments = ", ".join(f"{column} = :{column}" for column in values)
    async with uow() as u:
        await u.connection.execute(
            text(f"UPDATE tenants SET {assignments} WHERE tenant_id = :tenant"), {**values, "tenant": tenant}
        )
        await u.commit()


async def test_the_byte_rate_admits_a_body_the_size_of_the_bucket_and_not_one_byte_more(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    consumer: ServiceProcess,
    tenant_users: TenantUsers,
) -> None:
    sizes = {"below": 599, "at": 600, "above": 601}
    sent = {}
    for case, size in sizes.items():
        tenant = await fresh_tenant(uow_factory)
        await _set(uow_factory, tenant, publish_bytes_per_second=10)  # a bucket of 600 bytes
        wire = make_wire_dict(tenant_id=tenant)
        await tenant_users.publisher(tenant).publish_bytes(padded_body(wire, size), message_id=wire["message_id"])
        sent[case] = wire["message_id"]

    [dead] = await dead_letters(channel, settings, 1)
    assert dead.message_id == sent["above"]
    assert dead.headers[headers.REASON] == "over_limit"
    assert "over its publish rate" in str(dead.headers[headers.ERROR_MESSAGE])
    await eventually(booked_once(uow_factory, sent["below"]))
    await eventually(booked_once(uow_factory, sent["at"]))
    assert await ledger_count(uow_factory, sent["above"]) == 0


async def test_ingress_and_direct_publishes_draw_on_one_rate(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    consumer: ServiceProcess,
    tenant_users: TenantUsers,
    tmp_path: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    await _set(uow_factory, tenant, publish_bytes_per_second=10)
    batch = write_csv(tmp_path / "one.csv", [payment_row(1)])
    assert (await submit_batch(SubmitBatch(tenant, batch), uow_factory, settings)).accepted == 1  # ~560 bytes
    wire = make_wire_dict(tenant_id=tenant)
    await tenant_users.publisher(tenant).publish(wire)
    [dead] = await dead_letters(channel, settings, 1)
    assert dead.message_id == wire["message_id"]
    assert dead.headers[headers.REASON] == "over_limit"
    assert dead.body == to_wire_bytes(wire)  # nothing is lost: the dead letter is the payment


async def test_the_in_flight_limit_counts_what_ingress_accepted(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    consumer: ServiceProcess,
    tenant_users: TenantUsers,
    tmp_path: Path,
) -> None:
    # No relay runs: what a batch accepted stays in flight. The limit is 3; one direct payment more.
    backlog = {"below": 1, "at": 2, "above": 3}
    sent = {}
    for case, rows in backlog.items():
        tenant = await fresh_tenant(uow_factory)
        await _set(uow_factory, tenant, max_in_flight=3)
        batch = write_csv(tmp_path / f"{case}.csv", [payment_row(n) for n in range(rows)])
        assert (await submit_batch(SubmitBatch(tenant, batch), uow_factory, settings)).accepted == rows
        wire = make_wire_dict(tenant_id=tenant)
        await tenant_users.publisher(tenant).publish(wire)
        sent[case] = wire["message_id"]

    [dead] = await dead_letters(channel, settings, 1)
    assert dead.message_id == sent["above"]
    assert dead.headers[headers.REASON] == "over_limit"
    assert "3 payments in flight" in str(dead.headers[headers.ERROR_MESSAGE])
    await eventually(booked_once(uow_factory, sent["below"]))
    await eventually(booked_once(uow_factory, sent["at"]))


async def test_the_byte_quota_counts_what_ingress_accepted_and_admits_up_to_it_and_not_one_byte_more(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    consumer: ServiceProcess,
    tenant_users: TenantUsers,
    tmp_path: Path,
) -> None:
    # No relay runs: the batch's payment stays in flight with its body's bytes. The quota is set so that
    # a direct body of 600 bytes lands exactly on it, or one byte over it.
    room = {"at": 600, "above": 599}
    sent, bodies = {}, {}
    for case, bytes_left in room.items():
        tenant = await fresh_tenant(uow_factory)
        batch = write_csv(tmp_path / f"{case}.csv", [payment_row(1)])
        assert (await submit_batch(SubmitBatch(tenant, batch), uow_factory, settings)).accepted == 1
        async with uow_factory() as u:
            accepted = (
                await u.connection.execute(
                    text("SELECT sum(octet_length(body)) FROM outbox WHERE tenant_id = :t"), {"t": tenant}
                )
            ).scalar_one()
        await _set(uow_factory, tenant, max_bytes_in_flight=accepted + bytes_left)
        wire = make_wire_dict(tenant_id=tenant)
        bodies[case] = padded_body(wire, 600)
        await tenant_users.publisher(tenant).publish_bytes(bodies[case], message_id=wire["message_id"])
        sent[case] = wire["message_id"]

    [dead] = await dead_letters(channel, settings, 1)
    assert dead.message_id == sent["above"]
    assert dead.headers[headers.REASON] == "over_limit"
    assert "bytes of payments in flight" in str(dead.headers[headers.ERROR_MESSAGE])
    assert dead.body == bodies["above"]  # nothing is lost: the dead letter is the payment
    await eventually(booked_once(uow_factory, sent["at"]))
    assert await ledger_count(uow_factory, sent["above"]) == 0


async def test_the_relays_publishes_are_not_charged_again(
    uow_factory: UnitOfWorkFactory, settings: Settings, consumer: ServiceProcess
) -> None:
    tenant = await fresh_tenant(uow_factory)
    await _set(uow_factory, tenant, publish_bytes_per_second=10, max_in_flight=1)
    wires = [make_wire_dict(tenant_id=tenant) for _ in range(5)]  # 5 x ~560 bytes: far over both limits
    for wire in wires:
        await send_payment(settings, wire)  # as remit's own login, like the relay
    for wire in wires:
        await eventually(booked_once(uow_factory, wire["message_id"]))


async def test_a_suspended_tenants_direct_publishes_are_dead_lettered_and_its_accepted_ones_complete(
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    tenant_users: TenantUsers,
    logs_dir: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    direct, accepted = make_wire_dict(tenant_id=tenant), make_wire_dict(tenant_id=tenant)
    await tenant_users.publisher(tenant).publish(direct)  # queued before the suspension reached the broker
    await send_payment(settings, accepted)  # accepted at ingress and published by the relay
    await _set(uow_factory, tenant, status="suspended")
    consumer = ServiceProcess.consumer(service_env.env(), logs_dir / "consumer.log")
    try:
        [dead] = await dead_letters(channel, settings, 1)
        await eventually(booked_once(uow_factory, accepted["message_id"]))
    finally:
        consumer.stop()
    assert dead.message_id == direct["message_id"]
    assert dead.headers[headers.REASON] == "tenant_suspended"
    assert await ledger_count(uow_factory, direct["message_id"]) == 0

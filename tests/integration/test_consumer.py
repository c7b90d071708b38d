"""The idempotent consumer as a real process on real RabbitMQ and PostgreSQL."""

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aio_pika.abc import AbstractChannel

from app.messaging import headers
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from contracts import wire_timestamp
from tests.utils.factories import make_wire_dict, to_wire_bytes
from tests.utils.scenarios import drain_with_a_new_consumer, send_until_dead_lettered
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.world import (
    attempts_for,
    booked_once,
    dead_letters,
    fresh_tenant,
    ledger_count,
    processed_count,
    publish_raw,
    send_payment,
)

pytestmark = pytest.mark.integration


async def test_same_message_id_three_times_moves_money_once(
    uow_factory: UnitOfWorkFactory, settings: Settings, channel: AbstractChannel, consumer: ServiceProcess
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant)
    for _ in range(3):
        await send_payment(settings, wire)
    message_id = wire["message_id"]

    async def booked() -> bool:
        return await ledger_count(uow_factory, message_id) >= 1

    await eventually(booked)
    await asyncio.sleep(1.5)  # give the two duplicates every chance to be (wrongly) booked
    assert await ledger_count(uow_factory, message_id) == 1
    assert await processed_count(uow_factory, message_id) == 1


async def test_killed_after_commit_before_ack_is_redelivered_and_not_paid_twice(
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    logs_dir: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant)
    doomed = ServiceProcess.consumer(service_env.env(), logs_dir / "consumer-doomed.log", kill_after_commits=1)
    await send_payment(settings, wire)
    assert doomed.wait_exit(timeout=60) == -9
    assert await ledger_count(uow_factory, wire["message_id"]) == 1  # committed before the kill

    await drain_with_a_new_consumer(service_env, settings, logs_dir)
    assert await ledger_count(uow_factory, wire["message_id"]) == 1
    assert await processed_count(uow_factory, wire["message_id"]) == 1


async def test_header_body_tenant_mismatch_is_quarantined_not_processed(
    uow_factory: UnitOfWorkFactory, settings: Settings, channel: AbstractChannel, consumer: ServiceProcess
) -> None:
    victim = await fresh_tenant(uow_factory)
    attacker = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=victim)
    await publish_raw(
        settings.amqp_url,
        to_wire_bytes(wire),
        f"{attacker}.payment",
        tenant_header=attacker,
        message_id=wire["message_id"],
    )
    [dead] = await dead_letters(channel, settings, 1)
    assert dead.headers[headers.REASON] == "tenant_mismatch"
    assert dead.message_id == wire["message_id"]
    assert dead.body == to_wire_bytes(wire)  # the evidence is kept byte for byte
    assert await ledger_count(uow_factory, wire["message_id"]) == 0
    [attempt] = await attempts_for(uow_factory, wire["message_id"])
    assert attempt.outcome == "dead_lettered"
    assert attempt.error_type == "TenantMismatch"


async def test_malformed_bodies_are_dead_lettered_with_reasons_and_the_consumer_carries_on(
    uow_factory: UnitOfWorkFactory, settings: Settings, channel: AbstractChannel, consumer: ServiceProcess
) -> None:
    tenant = await fresh_tenant(uow_factory)
    key = f"{tenant}.payment"
    bad_bodies = [
        (b"{not json", "application/json"),
        (json.dumps(make_wire_dict(tenant_id=tenant, amount_cents=10.5)).encode(), "application/json"),
        (to_wire_bytes(make_wire_dict(tenant_id=tenant)), "text/plain"),
        (b"\xff\xfe\x00", None),
    ]
    for body, content_type in bad_bodies:
        await publish_raw(settings.amqp_url, body, key, tenant_header=tenant, content_type=content_type)
    dead = await dead_letters(channel, settings, len(bad_bodies))
    assert {d.headers[headers.REASON] for d in dead} == {"invalid"}
    errors = " | ".join(str(d.headers[headers.ERROR_MESSAGE]) for d in dead)
    assert "amount_cents" in errors
    assert "content_type must be application/json" in errors

    good = make_wire_dict(tenant_id=tenant)
    await publish_raw(settings.amqp_url, to_wire_bytes(good), key, tenant_header=tenant, message_id=good["message_id"])
    await eventually(booked_once(uow_factory, good["message_id"]))
    assert consumer.proc.poll() is None


async def test_expired_on_arrival_is_dead_lettered_never_processed(
    uow_factory: UnitOfWorkFactory, settings: Settings, channel: AbstractChannel, consumer: ServiceProcess
) -> None:
    tenant = await fresh_tenant(uow_factory)
    stamp = wire_timestamp(datetime.now(UTC) - timedelta(hours=2))
    wire = make_wire_dict(tenant_id=tenant, timestamp_utc=stamp, ttl_seconds=3600)
    dead = await send_until_dead_lettered(settings, channel, wire)
    assert dead.headers[headers.REASON] == "expired"
    assert await ledger_count(uow_factory, wire["message_id"]) == 0


async def test_a_paid_message_redelivered_after_its_ttl_is_a_duplicate_not_expired(
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    logs_dir: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    doomed = ServiceProcess.consumer(service_env.env(), logs_dir / "doomed.log", kill_after_commits=1)
    await doomed.ready()  # the 2 s TTL must not run out while a loaded machine starts the consumer
    stamp = wire_timestamp(datetime.now(UTC))
    wire = make_wire_dict(tenant_id=tenant, timestamp_utc=stamp, ttl_seconds=2)
    await send_payment(settings, wire)
    assert doomed.wait_exit(timeout=60) == -9  # booked, then killed before the ack
    await asyncio.sleep(2.5)  # the TTL runs out while the unacked message waits for redelivery
    await drain_with_a_new_consumer(service_env, settings, logs_dir)
    assert await ledger_count(uow_factory, wire["message_id"]) == 1
    dead_letters = await channel.get_queue(settings.dead_letter_queue)
    assert await dead_letters.get(no_ack=True, fail=False) is None  # not an "expired" dead letter: it was paid

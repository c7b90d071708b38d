"""Retries, permanent failures and TTL on the real broker, with the test-only core's failure rules
(tests/support/core.py)."""

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import aio_pika
import aiormq.exceptions
import pytest
from aio_pika.abc import AbstractChannel

from app.messaging import headers
from app.messaging.properties import CONTENT_TYPE
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from contracts import wire_timestamp
from tests.utils.factories import make_wire_dict, new_tenant_id, to_wire_bytes
from tests.utils.scenarios import consumer_running, send_until_booked, send_until_dead_lettered
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.world import (
    attempts_for,
    booked_once,
    dead_letters,
    fresh_tenant,
    ledger_count,
    route_tenant,
    send_payment,
)

pytestmark = pytest.mark.integration


async def test_transient_failures_then_success_processes_once_after_n_attempts(
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    logs_dir: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant, creditor_account="555000111")
    with consumer_running(service_env, logs_dir, TEST_CORE_FLAKY_ACCOUNTS='{"555000111": 2}'):
        await send_until_booked(settings, uow_factory, wire)
        await asyncio.sleep(0.5)
    assert await ledger_count(uow_factory, wire["message_id"]) == 1
    attempts = await attempts_for(uow_factory, wire["message_id"])
    assert [(a.attempt, a.outcome, a.error_type) for a in attempts] == [
        (1, "retrying", "CoreBankingTimeout"),
        (2, "retrying", "CoreBankingTimeout"),
    ]


async def test_always_failing_is_dead_lettered_after_the_limit_with_every_attempt_recorded(
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    logs_dir: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant, creditor_account="555000222")
    rules = {"TEST_CORE_FLAKY_ACCOUNTS": '{"555000222": 99}', "REMIT_MAX_RETRIES": "3"}
    with consumer_running(service_env, logs_dir, **rules):
        dead = await send_until_dead_lettered(settings, channel, wire)
    assert dead.headers[headers.REASON] == "retries_exhausted"
    assert dead.headers[headers.ATTEMPTS] == 4
    assert await ledger_count(uow_factory, wire["message_id"]) == 0
    attempts = await attempts_for(uow_factory, wire["message_id"])
    assert [(a.attempt, a.outcome) for a in attempts] == [
        (1, "retrying"),
        (2, "retrying"),
        (3, "retrying"),
        (4, "dead_lettered"),
    ]


async def test_permanent_failure_is_dead_lettered_at_once(
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    logs_dir: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant, creditor_account="555000333")
    with consumer_running(service_env, logs_dir, TEST_CORE_CLOSED_ACCOUNTS='["555000333"]'):
        dead = await send_until_dead_lettered(settings, channel, wire)
    assert dead.headers[headers.REASON] == "account_closed"
    assert "closed" in str(dead.headers[headers.ERROR_MESSAGE])
    [attempt] = await attempts_for(uow_factory, wire["message_id"])
    assert (attempt.attempt, attempt.outcome, attempt.error_type) == (1, "dead_lettered", "AccountClosed")
    assert await ledger_count(uow_factory, wire["message_id"]) == 0


async def test_unknown_tenant_is_dead_lettered(
    uow_factory: UnitOfWorkFactory, settings: Settings, channel: AbstractChannel, consumer: ServiceProcess
) -> None:
    wire = make_wire_dict(tenant_id=new_tenant_id())  # never added
    with pytest.raises(aiormq.exceptions.PublishError, match="NO_ROUTE"):
        await send_payment(settings, wire)  # no binding for its key: refused at publish
    await route_tenant(settings.amqp_url, wire["tenant_id"], "basic")  # routed by mistake, still not registered
    dead = await send_until_dead_lettered(settings, channel, wire)
    assert dead.headers[headers.REASON] == "unknown_tenant"
    assert await ledger_count(uow_factory, wire["message_id"]) == 0


async def test_expired_in_the_queue_reaches_the_dead_letters_never_processed(
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    logs_dir: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant)
    exchange = await channel.get_exchange(settings.exchange)
    await exchange.publish(  # no consumer yet: the broker expires it at the head of the queue
        aio_pika.Message(
            to_wire_bytes(wire),
            content_type=CONTENT_TYPE,
            message_id=wire["message_id"],
            expiration=0.05,
            headers={headers.TENANT: tenant},
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        ),
        routing_key=f"{tenant}.payment",
    )
    [dead] = await dead_letters(channel, settings, 1)
    assert dead.headers["x-first-death-reason"] == "expired"
    with consumer_running(service_env, logs_dir):
        await asyncio.sleep(2.0)
    assert await ledger_count(uow_factory, wire["message_id"]) == 0


async def test_a_retry_never_extends_the_ttl(
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    logs_dir: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    stamp = wire_timestamp(datetime.now(UTC))
    wire = make_wire_dict(tenant_id=tenant, creditor_account="555000444", timestamp_utc=stamp, ttl_seconds=2)
    rules = {
        "TEST_CORE_FLAKY_ACCOUNTS": '{"555000444": 99}',
        "REMIT_RETRY_DELAYS_SECONDS": "[1.5, 1.5, 1.5]",
        "REMIT_MAX_RETRIES": "5",
    }
    with consumer_running(service_env, logs_dir, **rules):
        dead = await send_until_dead_lettered(settings, channel, wire)
    assert dead.headers[headers.REASON] == "expired"
    assert await ledger_count(uow_factory, wire["message_id"]) == 0


async def test_consumer_killed_while_the_message_waits_in_a_delay_queue_still_retries(
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    logs_dir: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant, creditor_account="555000555")
    slow = {"TEST_CORE_FLAKY_ACCOUNTS": '{"555000555": 1}', "REMIT_RETRY_DELAYS_SECONDS": "[3.0]"}
    first = ServiceProcess.consumer(service_env.env(**slow), logs_dir / "first.log")
    await send_payment(settings, wire)

    async def waiting_in_delay_queue() -> bool:
        return len(await attempts_for(uow_factory, wire["message_id"])) == 1

    await eventually(waiting_in_delay_queue)
    first.kill()  # SIGKILL: nothing in this process remembers the retry
    with consumer_running(service_env, logs_dir, "second", **slow):
        await eventually(booked_once(uow_factory, wire["message_id"]), timeout=30)
    assert await ledger_count(uow_factory, wire["message_id"]) == 1

"""The outbox relay on real RabbitMQ: AMQP properties, confirms, unroutable messages, crash safety."""

import asyncio
from pathlib import Path

import aio_pika
import pytest
from aio_pika.abc import AbstractChannel
from sqlalchemy.ext.asyncio import AsyncEngine

from app.messaging import headers
from app.messaging.connection import connect, login_of, publisher_channel
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.publisher.relay import OutboxRelay
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.world import fresh_tenant, ledger_rows_for_tenant, outbox_rows, payment_row, write_csv

pytestmark = pytest.mark.integration


def _relay(engine: AsyncEngine, channel: AbstractChannel, settings: Settings) -> OutboxRelay:
    return OutboxRelay(engine, channel, settings.exchange, login_of(settings.amqp_url), batch_size=100)


async def test_relay_publishes_in_order_with_the_contract_properties(
    engine: AsyncEngine,
    uow_factory: UnitOfWorkFactory,
    channel: AbstractChannel,
    settings: Settings,
    tmp_path: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory, ttl=3600)
    batch = await submit_batch(
        SubmitBatch(tenant, write_csv(tmp_path / "b.csv", [payment_row(n) for n in range(30)])),
        uow_factory,
        settings,
    )
    tap = await channel.declare_queue("", exclusive=True)
    await tap.bind(settings.exchange, routing_key=f"{tenant}.payment")

    while await _relay(engine, channel, settings).relay_once():
        pass

    rows = await outbox_rows(uow_factory, batch.correlation_id)
    assert all(r.published_at is not None for r in rows)
    received = [await _get(tap) for _ in rows]
    assert [m.message_id for m in received] == [str(r.message_id) for r in rows]  # submission order
    first = received[0]
    assert first.delivery_mode == aio_pika.DeliveryMode.PERSISTENT
    assert first.content_type == "application/json"
    assert first.correlation_id == batch.correlation_id
    assert first.headers[headers.TENANT] == tenant
    assert first.user_id == "guest"
    assert first.timestamp is not None
    assert first.expiration is not None
    assert 3500 < float(str(first.expiration)) <= 3600
    assert first.body == rows[0].body


async def _get(queue: aio_pika.abc.AbstractQueue) -> aio_pika.abc.AbstractIncomingMessage:
    for _ in range(50):
        message = await queue.get(no_ack=True, fail=False)
        if message is not None:
            return message
        await asyncio.sleep(0.1)
    raise AssertionError("no message arrived")


async def test_unroutable_messages_stay_in_the_outbox_and_are_logged_once(
    engine: AsyncEngine,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    batch = await submit_batch(
        SubmitBatch(tenant, write_csv(tmp_path / "b.csv", [payment_row(1)])), uow_factory, settings
    )
    connection = await connect(settings.amqp_url, "test-unroutable")
    try:
        chan = await publisher_channel(connection)
        await chan.declare_exchange("payments.nowhere", aio_pika.ExchangeType.TOPIC, durable=False, auto_delete=True)
        # A batch big enough for every row other tests left unpublished in the session's database: this
        # tenant's row is tried (then backs off: tests/integration/test_relay_refusals.py).
        relay = OutboxRelay(engine, chan, "payments.nowhere", "guest", batch_size=10_000)
        for _ in range(3):  # refused, logged the first time only
            assert await relay.relay_once() == 0
    finally:
        await connection.close()
    rows = await outbox_rows(uow_factory, batch.correlation_id)
    assert rows[0].published_at is None
    about_it = [r for r in caplog.records if str(rows[0].message_id) in r.getMessage()]
    assert [r.levelname for r in about_it] == ["ERROR"], [r.getMessage() for r in about_it]


async def test_relay_killed_after_publish_loses_nothing_and_pays_nothing_twice(
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    tmp_path: Path,
    consumer: ServiceProcess,
    logs_dir: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    rows = [payment_row(n) for n in range(300)]
    batch = await submit_batch(SubmitBatch(tenant, write_csv(tmp_path / "b.csv", rows)), uow_factory, settings)

    doomed = ServiceProcess.relay(
        service_env.env(REMIT_RELAY_BATCH_SIZE="100"), logs_dir / "relay1.log", kill_after_publishes=1
    )
    assert doomed.wait_exit(timeout=60) == -9  # SIGKILLed itself after the broker confirmed 100 messages
    published = [r for r in await outbox_rows(uow_factory, batch.correlation_id) if r.published_at]
    assert published == []  # confirmed but never marked: the restart must publish them again

    relay = ServiceProcess.relay(service_env.env(), logs_dir / "relay2.log")
    try:

        async def all_booked() -> bool:
            return len(await ledger_rows_for_tenant(uow_factory, tenant)) >= len(rows)

        await eventually(all_booked, timeout=60)
        await asyncio.sleep(1.0)  # let the duplicates from the first relay's confirmed publishes arrive
    finally:
        relay.stop()
    booked = await ledger_rows_for_tenant(uow_factory, tenant)
    assert sorted(b.payment_reference for b in booked) == sorted(r["payment_reference"] for r in rows)
    assert all(r.published_at for r in await outbox_rows(uow_factory, batch.correlation_id))

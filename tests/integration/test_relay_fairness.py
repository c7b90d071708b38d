"""Fair admission at the outbox relay on real RabbitMQ: equal shares per tenant, backpressure per queue.

Each test has a database of its own: a tenant's equal share depends on how many tenants wait in the outbox,
and the session's database holds earlier tests' unpublished rows."""

import asyncio
from pathlib import Path
from typing import Any

import aio_pika
import pytest
from aio_pika.abc import AbstractChannel, AbstractRobustConnection

from app.messaging.connection import login_of
from app.messaging.topology import Topology
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.publisher.fair_selection import QueueDepths
from app.publisher.relay import OutboxRelay
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.services import OwnWorld
from tests.utils.world import fresh_tenant, outbox_rows, payment_row, write_csv

pytestmark = pytest.mark.integration


async def _submit(uow: UnitOfWorkFactory, settings: Settings, tmp_path: Path, tenant: str, n: int, tag: str) -> str:
    csv = write_csv(tmp_path / f"{tenant}-{tag}.csv", [payment_row(i) for i in range(n)])
    return (await submit_batch(SubmitBatch(tenant, csv), uow, settings)).correlation_id


async def _tap(channel: AbstractChannel, settings: Settings, tenant: str) -> aio_pika.abc.AbstractQueue:
    tap = await channel.declare_queue("", exclusive=True)
    await tap.bind(settings.exchange, routing_key=f"{tenant}.payment")
    return tap


async def _drain(queue: aio_pika.abc.AbstractQueue) -> list[str]:
    ids: list[str] = []
    await asyncio.sleep(0.3)
    while (message := await queue.get(no_ack=True, fail=False)) is not None:
        ids.append(str(message.message_id))
    return ids


def _published(rows: list[Any]) -> list[Any]:
    return [r for r in rows if r.published_at is not None]


async def test_one_cycle_publishes_the_quiet_tenant_despite_a_backlog(
    own_world: OwnWorld, channel: AbstractChannel, tmp_path: Path
) -> None:
    engine, uow_factory, settings = own_world.engine, own_world.uow_factory, own_world.settings
    noisy = await fresh_tenant(uow_factory)
    quiet = await fresh_tenant(uow_factory)  # same tier: both share payments.work.basic
    flood = await _submit(uow_factory, settings, tmp_path, noisy, 400, "flood")
    trickle = await _submit(uow_factory, settings, tmp_path, quiet, 3, "trickle")
    noisy_tap, quiet_tap = await _tap(channel, settings, noisy), await _tap(channel, settings, quiet)

    relay = OutboxRelay(engine, channel, settings.exchange, login_of(settings.amqp_url), batch_size=100)
    assert await relay.relay_once() > 0

    quiet_rows = await outbox_rows(uow_factory, trickle)
    assert len(_published(quiet_rows)) == 3  # in the very first cycle, behind none of the 400
    noisy_rows = await outbox_rows(uow_factory, flood)
    sent = _published(noisy_rows)
    assert 0 < len(sent) <= 50  # at most an equal share of the batch
    assert [r.outbox_id for r in sent] == [r.outbox_id for r in noisy_rows[: len(sent)]]  # oldest first
    assert await _drain(noisy_tap) == [str(r.message_id) for r in sent]  # submission order on the wire
    assert await _drain(quiet_tap) == [str(r.message_id) for r in quiet_rows]


async def test_a_tenant_above_the_watermark_waits_in_the_outbox_others_are_published(
    own_world: OwnWorld, amqp: AbstractRobustConnection, channel: AbstractChannel, tmp_path: Path
) -> None:
    engine, uow_factory, settings = own_world.engine, own_world.uow_factory, own_world.settings
    noisy = await fresh_tenant(uow_factory, tier="free")  # no consumer: its queue only grows
    quiet = await fresh_tenant(uow_factory, tier="premium")
    topology = Topology.from_settings(settings)
    depths = QueueDepths(amqp, topology, high_watermark=10)
    relay = OutboxRelay(
        engine, channel, settings.exchange, login_of(settings.amqp_url), batch_size=100, queue_depths=depths
    )
    try:
        first = await _submit(uow_factory, settings, tmp_path, noisy, 30, "first")
        for _ in range(10):  # the queue is empty: the whole first batch goes out
            if len(_published(await outbox_rows(uow_factory, first))) == 30:
                break
            await relay.relay_once()
        assert len(_published(await outbox_rows(uow_factory, first))) == 30
        queue = await (await amqp.channel()).declare_queue(topology.tier_queue("free"), passive=True)
        assert (queue.declaration_result.message_count or 0) >= 30  # above the watermark of 10

        held = await _submit(uow_factory, settings, tmp_path, noisy, 20, "held")  # a backlog, not a trickle
        trickle = await _submit(uow_factory, settings, tmp_path, quiet, 3, "trickle")
        quiet_tap = await _tap(channel, settings, quiet)
        for _ in range(3):
            await relay.relay_once()

        assert _published(await outbox_rows(uow_factory, held)) == []  # throttled, still in the outbox
        quiet_rows = await outbox_rows(uow_factory, trickle)
        assert len(_published(quiet_rows)) == 3
        assert await _drain(quiet_tap) == [str(r.message_id) for r in quiet_rows]  # in order
    finally:
        await depths.close()

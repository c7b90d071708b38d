"""Relay leadership on real processes: a relay whose advisory lock is gone stops publishing at once.

Two `remit relay` processes: the first leads, the second waits. The leader's lock backend is terminated
(`pg_terminate_backend`, as a failover or a network cut would end it); the standby takes the lock and
carries on. The old leader must publish nothing from then on (it checks its lock before every cycle), so
no row is published by two leaders at once and each batch still goes out in submission order. It then
waits as a standby: when the new leader stops, it leads again.
"""

import asyncio
import re
from collections import defaultdict
from pathlib import Path

import httpx
import pytest
from aio_pika.abc import AbstractChannel, AbstractQueue
from sqlalchemy import text

from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.publisher.leadership import RELAY_LOCK_KEY
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.services import OwnWorld, ServiceProcess, eventually, free_port
from tests.utils.world import fresh_tenant, outbox_rows, payment_row, write_csv

pytestmark = pytest.mark.integration

ROWS_PER_BATCH = 20
_CONFIRMED = re.compile(r'^remit_publish_confirms_total\{result="confirmed"\} (\S+)$', re.MULTILINE)


class Relay:
    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.process = ServiceProcess.relay({**env, "REMIT_RELAY_METRICS_PORT": str(self.port)}, log)

    async def confirmed(self) -> int:
        """Publishes the broker confirmed for this process (its own Prometheus counter)."""
        async with httpx.AsyncClient() as client:
            page = (await client.get(f"http://127.0.0.1:{self.port}/metrics", timeout=5)).text
        match = _CONFIRMED.search(page)
        return int(float(match.group(1))) if match else 0

    async def serving(self) -> bool:
        try:
            await self.confirmed()
        except httpx.HTTPError:
            return False
        return True


async def _lock_holder(uow: UnitOfWorkFactory) -> int | None:
    """The backend pid holding the relay's advisory lock in this database, if any."""
    async with uow() as u:
        pid = await u.connection.execute(
            text(
                "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
                "AND classid = :high AND objid = :low "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            ),
            {"high": RELAY_LOCK_KEY >> 32, "low": RELAY_LOCK_KEY & 0xFFFFFFFF},
        )
        return pid.scalar_one_or_none()


async def _terminate(uow: UnitOfWorkFactory, pid: int) -> None:
    async with uow() as u:
        assert (await u.connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})).scalar_one()


async def _submit(uow: UnitOfWorkFactory, settings: Settings, tenant: str, tmp: Path, n: int) -> str:
    path = write_csv(tmp / f"batch{n}.csv", [payment_row(i) for i in range(ROWS_PER_BATCH)])
    return (await submit_batch(SubmitBatch(tenant, path), uow, settings)).correlation_id


async def _all_published(uow: UnitOfWorkFactory, batches: list[str]) -> bool:
    for batch in batches:
        if any(r.published_at is None for r in await outbox_rows(uow, batch)):
            return False
    return True


async def _drain(tap: AbstractQueue, expected: int, timeout: float = 30) -> list[tuple[str, str]]:
    """(correlation_id, message_id) of every message the tap got, in arrival order."""
    got: list[tuple[str, str]] = []
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        message = await tap.get(no_ack=True, fail=False)
        if message is None:
            if len(got) >= expected:
                await asyncio.sleep(1.0)  # anything published twice would arrive by now
                if (late := await tap.get(no_ack=True, fail=False)) is None:
                    return got
                message = late
            else:
                await asyncio.sleep(0.05)
                continue
        got.append((str(message.correlation_id), str(message.message_id)))
    raise AssertionError(f"{len(got)} of {expected} messages arrived within {timeout}s")


async def test_a_relay_that_lost_its_lock_publishes_nothing_more_and_a_standby_takes_over(
    own_world: OwnWorld, channel: AbstractChannel, tmp_path: Path, logs_dir: Path
) -> None:
    # A database of its own: with 5 rows a cycle, earlier tests' unpublished rows would crowd this tenant out.
    service_env, uow_factory, settings = own_world.service_env, own_world.uow_factory, own_world.settings
    tenant = await fresh_tenant(uow_factory)
    tap = await channel.declare_queue("", exclusive=True)
    await tap.bind(settings.exchange, routing_key=f"{tenant}.payment")
    env = service_env.env(
        REMIT_RELAY_BATCH_SIZE="5", REMIT_RELAY_POLL_SECONDS="0.05", REMIT_RELAY_QUEUE_HIGH_WATERMARK="0"
    )
    old = Relay(env, logs_dir / "relay-old.log")
    new: Relay | None = None
    batches: list[str] = []
    try:
        await eventually(lambda: _serving_and_leading(old, uow_factory), timeout=30)
        old_lock = await _lock_holder(uow_factory)
        assert old_lock is not None
        new = Relay(env, logs_dir / "relay-new.log")
        await eventually(new.serving, timeout=30)
        batches.append(await _submit(uow_factory, settings, tenant, tmp_path, 0))
        await eventually(lambda: _all_published(uow_factory, batches), timeout=30)
        assert (await old.confirmed(), await new.confirmed()) == (ROWS_PER_BATCH, 0)  # one leader so far

        await _terminate(uow_factory, old_lock)
        for n in range(1, 11):  # a steady stream while the standby takes over
            batches.append(await _submit(uow_factory, settings, tenant, tmp_path, n))
            await asyncio.sleep(0.1)

        async def new_leader_published() -> bool:
            holder = await _lock_holder(uow_factory)
            return holder is not None and holder != old_lock and await new.confirmed() > 0

        await eventually(new_leader_published, timeout=30)
        old_total = await old.confirmed()
        for n in range(11, 21):
            batches.append(await _submit(uow_factory, settings, tenant, tmp_path, n))
            await asyncio.sleep(0.05)
        await eventually(lambda: _all_published(uow_factory, batches), timeout=60)
        assert await old.confirmed() == old_total  # nothing after the new leader started
        assert old.process.proc.poll() is None  # it waits as a standby, it did not die

        received = await _drain(tap, len(batches) * ROWS_PER_BATCH)
        assert old_total + await new.confirmed() == len(received) == len(batches) * ROWS_PER_BATCH
        order: dict[str, list[str]] = defaultdict(list)
        for correlation_id, message_id in received:
            order[correlation_id].append(message_id)
        for batch in batches:  # each row once, in submission order
            assert order[batch] == [str(r.message_id) for r in await outbox_rows(uow_factory, batch)], batch

        new.process.stop()
        batches.append(await _submit(uow_factory, settings, tenant, tmp_path, 21))
        await eventually(lambda: _all_published(uow_factory, batches), timeout=30)
        assert await old.confirmed() == old_total + ROWS_PER_BATCH  # the old leader leads again
    finally:
        old.process.stop()
        if new is not None:
            new.process.stop()


async def _serving_and_leading(relay: Relay, uow: UnitOfWorkFactory) -> bool:
    return await relay.serving() and await _lock_holder(uow) is not None

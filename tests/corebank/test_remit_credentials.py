"""remit authenticates to its core (REMIT_CORE_BANKING_TOKEN), on the real processes: the consumer books with its
token; a consumer holding a wrong token books nothing and loses nothing (its breaker stays open, the broker keeps
the payments, nothing is dead-lettered); and the token is rotated without a refused transfer: the core accepts
the new token beside the old, remit's consumers are replaced one by one with the new one while payments keep
coming, then the core drops the old one. The token is never in a log."""

import asyncio
import json
import re
from pathlib import Path

import httpx
import pytest
from aio_pika.abc import AbstractChannel

from app.messaging.topology import Topology
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.corebank.test_remit_consumer import consumer_on, get, queue_state
from tests.utils.core_world import core_keys, dead_letters_left, remit_records, wire_for
from tests.utils.corebank import (
    CoreBank,
    bearer,
    check_ledger,
    create_corebank_database,
    open_account,
    start_corebank,
    wait_ready,
)
from tests.utils.services import ServiceEnv, ServiceProcess, drop_database, eventually
from tests.utils.world import fresh_tenant, send_payment

pytestmark = pytest.mark.integration

REFUSED = re.compile(r'remit_core_request_seconds_count\{result="401",route="[a-z_]+"\} ([0-9.]+)')


def refusals(metrics: str) -> float:
    """Requests of this consumer the core answered 401 (remit_core_request_seconds, by route and result)."""
    return sum(float(n) for n in REFUSED.findall(metrics))


async def test_a_wrong_token_books_nothing_loses_nothing_and_the_right_one_books_everything_once(
    core: CoreBank,
    client: httpx.AsyncClient,
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    logs_dir: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    debtor, creditor = await open_account(client, 1_000_000), await open_account(client)
    wires = [wire_for(tenant, debtor, creditor, 100 + i) for i in range(10)]
    wrong = "w" * 43
    queue = Topology.from_settings(settings).tier_queue("basic")
    consumer = consumer_on(core, service_env, logs_dir / "wrong.log", REMIT_CORE_BANKING_TOKEN=wrong)
    try:
        await consumer.ready()
        for wire in wires:
            await send_payment(settings, wire)

        async def paused() -> bool:  # the breaker opened (401s) and its probe of /readyz keeps it open
            return queue_state(service_env.vhost, queue) == {"consumers": 0, "ready": len(wires)}

        await eventually(paused, timeout=60, poll=0.5)
        await asyncio.sleep(2)  # several probes: still open
        readyz = (await get(consumer, "/readyz")).json()
        metrics = (await get(consumer, "/metrics")).text
    finally:
        consumer.stop()
    assert "HTTP 401" in readyz["checks"]["core_banking"], readyz
    assert refusals(metrics) >= 1
    assert await dead_letters_left(channel, settings) == 0
    assert await remit_records(uow_factory, tenant) == []
    assert not [k for k in await core_keys(core.database_url) if k.startswith(f"{tenant}:")]
    assert wrong not in consumer.log_path.read_text()

    right = consumer_on(core, service_env, logs_dir / "right.log")
    try:
        await eventually(lambda: _recorded(uow_factory, tenant, len(wires)), timeout=60)
        metrics = (await get(right, "/metrics")).text
    finally:
        right.stop()
    assert refusals(metrics) == 0
    keys = await core_keys(core.database_url)
    records = await remit_records(uow_factory, tenant)
    assert {f"{tenant}:{r.message_id}": ("booked", r.core_transfer_id) for r in records} == {
        k: v for k, v in keys.items() if k.startswith(f"{tenant}:")
    }
    assert len(records) == len(wires)
    assert await dead_letters_left(channel, settings) == 0
    assert core.token not in right.log_path.read_text()


@pytest.mark.timeout(300)
async def test_the_token_is_rotated_without_a_refused_transfer(
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    logs_dir: Path,
    tmp_path: Path,
) -> None:
    old, new = "old-" + "o" * 40, "new-" + "n" * 40
    tokens_file = tmp_path / "clients.json"
    tokens_file.write_text(json.dumps({"remit": [old]}))
    database_url = await create_corebank_database()
    core = start_corebank(database_url, logs_dir / "core.log", tokens_file=tokens_file)
    consumers: list[ServiceProcess] = []
    refused = 0.0
    try:
        await wait_ready(core)
        as_old, as_new = CoreBank(core.process, database_url, old), CoreBank(core.process, database_url, new)
        async with as_old.client(timeout=10) as client:
            debtor, creditor = await open_account(client, 10_000_000), await open_account(client)
        tenant = await fresh_tenant(uow_factory)
        sent: list[str] = []

        async def send(n: int) -> None:
            for _ in range(n):
                wire = wire_for(tenant, debtor, creditor, 100 + len(sent))
                await send_payment(settings, wire)
                sent.append(wire["message_id"])
                await asyncio.sleep(0.05)

        consumers.append(consumer_on(as_old, service_env, logs_dir / "consumer-old.log"))
        await consumers[0].ready()
        await send(20)
        await eventually(lambda: _recorded(uow_factory, tenant, len(sent)), timeout=60)

        # 1. The core accepts both.
        rotate(tokens_file, {"remit": [old, new]})
        await eventually(lambda: _accepts(core, new), timeout=15)
        # 2. remit's consumers move to the new token one by one, payments coming all along.
        sending = asyncio.create_task(send(60))
        consumers.append(consumer_on(as_new, service_env, logs_dir / "consumer-new.log"))
        await consumers[1].ready()
        refused += refusals((await get(consumers[0], "/metrics")).text)
        consumers.pop(0).stop()  # graceful: what it holds is settled first
        await sending
        # 3. The core drops the old token.
        rotate(tokens_file, {"remit": [new]})
        await eventually(lambda: _refuses(core, old), timeout=15)
        await send(20)
        await eventually(lambda: _recorded(uow_factory, tenant, len(sent)), timeout=90)
        refused += refusals((await get(consumers[0], "/metrics")).text)
    finally:
        for consumer in consumers:
            consumer.stop()
        core.process.stop()

    assert refused == 0  # the core never refused one of remit's requests
    assert await dead_letters_left(channel, settings) == 0
    records = await remit_records(uow_factory, tenant)
    assert sorted(str(r.message_id) for r in records) == sorted(sent)
    keys = await core_keys(database_url)
    assert {f"{tenant}:{r.message_id}": ("booked", r.core_transfer_id) for r in records} == keys
    assert (await check_ledger(database_url)).booked_keys == len(sent)  # one transfer per payment
    logs = every_log(logs_dir)
    assert old not in logs
    assert new not in logs
    await drop_database(database_url)


def every_log(folder: Path) -> str:
    return "".join(path.read_text() for path in folder.glob("*.log"))


def rotate(path: Path, clients: dict[str, list[str]]) -> None:
    staged = path.with_suffix(".new")
    staged.write_text(json.dumps(clients))
    staged.replace(path)  # atomic: the core never reads half a file


async def _answer(core: CoreBank, token: str) -> int:
    async with httpx.AsyncClient(base_url=core.url, headers=bearer(token), timeout=5) as client:
        return (await client.get("/journal", params={"limit": 1})).status_code


async def _accepts(core: CoreBank, token: str) -> bool:
    return await _answer(core, token) == 200


async def _refuses(core: CoreBank, token: str) -> bool:
    return await _answer(core, token) == 401


async def _recorded(uow: UnitOfWorkFactory, tenant: str, n: int) -> bool:
    return len(await remit_records(uow, tenant)) >= n

"""remit's consumer, a real process, pointed at the reference core, another real process with its own database
(REMIT_CORE_BANKING_URL): payments are booked in the core exactly once and remit records the core's transfer
ids; refusals are dead-lettered at once; and when the core goes down the circuit breaker pauses the consumers
(the broker keeps the payments, no retries are burnt), shows in /readyz and /metrics, and resumes by itself
when the core is back, booking everything once."""

import asyncio
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from aio_pika.abc import AbstractChannel
from sqlalchemy import text

from app.messaging import headers
from app.messaging.topology import Topology
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.pool_operations import pool_status
from tests.utils.core_world import core_keys, dead_letters_left, remit_records, wire_for
from tests.utils.corebank import (
    CoreBank,
    check_ledger,
    create_corebank_database,
    open_account,
    start_corebank,
    wait_ready,
)
from tests.utils.services import (
    MANAGEMENT_AUTH,
    MANAGEMENT_URL,
    ServiceEnv,
    ServiceProcess,
    drop_database,
    eventually,
    management,
)
from tests.utils.world import dead_letters, fresh_tenant, ledger_count, send_payment

pytestmark = pytest.mark.integration


def consumer_on(core: CoreBank, env: ServiceEnv, log: Path, **overrides: str) -> ServiceProcess:
    variables = {
        **core.remit_env(),
        "REMIT_CORE_BANKING_CONNECT_TIMEOUT_SECONDS": "1",
        "REMIT_CORE_BANKING_READ_TIMEOUT_SECONDS": "3",
        "REMIT_CORE_BANKING_BREAKER_THRESHOLD": "2",
        "REMIT_CORE_BANKING_PROBE_INTERVAL_SECONDS": "0.3",
        **overrides,
    }
    return ServiceProcess.consumer(env.env(**variables), log)


def queue_state(vhost: str, queue: str) -> dict[str, int]:
    with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH, timeout=10) as client:
        response = client.get(f"/api/queues/{quote(vhost, safe='')}/{quote(queue, safe='')}")
        response.raise_for_status()
        body = response.json()
    return {"consumers": int(body.get("consumers", 0)), "ready": int(body.get("messages_ready", 0))}


async def get(process: ServiceProcess, path: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{process.port}", timeout=5) as client:
        return await client.get(path)


async def test_payments_are_booked_in_the_core_once_and_refusals_dead_lettered(
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
    closed = await open_account(client, status="closed")
    wires = [wire_for(tenant, debtor, creditor, 100 + i) for i in range(20)]
    refused = wire_for(tenant, debtor, closed, 500)
    consumer = consumer_on(core, service_env, logs_dir / "consumer.log")
    try:
        for wire in [*wires, refused]:
            await send_payment(settings, wire)
        [dead] = await dead_letters(channel, settings, 1)

        async def all_recorded() -> bool:
            return len(await remit_records(uow_factory, tenant)) == len(wires)

        await eventually(all_recorded, timeout=60)
        await send_payment(settings, wires[0])  # a redelivered copy: a duplicate, never a second transfer
        await asyncio.sleep(1.0)
    finally:
        consumer.stop()
    assert dead.headers[headers.REASON] == "account_closed"
    assert "AC04" in str(dead.headers[headers.ERROR_MESSAGE])
    keys = await core_keys(core.database_url)
    records = await remit_records(uow_factory, tenant)
    assert {str(r.message_id) for r in records} == {w["message_id"] for w in wires}
    for r in records:
        assert r.in_ledger
        assert keys[f"{tenant}:{r.message_id}"] == ("booked", r.core_transfer_id)
    assert keys[f"{tenant}:{refused['message_id']}"][0] == "rejected"
    assert await ledger_count(uow_factory, refused["message_id"]) == 0  # remit books only what the core booked
    await check_ledger(core.database_url)  # debits = credits, balances = opening + credits - debits
    assert sum(1 for k, (status, _) in keys.items() if k.startswith(f"{tenant}:") and status == "booked") == 20


async def test_a_core_outage_pauses_the_consumers_and_everything_is_booked_once_after_it(
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    logs_dir: Path,
) -> None:
    database_url = await create_corebank_database()
    core = start_corebank(database_url, logs_dir / "core-before.log")
    consumer: ServiceProcess | None = None
    try:
        await wait_ready(core)
        async with core.client(timeout=10) as client:
            debtor, creditor = await open_account(client, 10_000_000), await open_account(client)
        tenant = await fresh_tenant(uow_factory)
        queue = Topology.from_settings(settings).tier_queue("basic")
        consumer = consumer_on(core, service_env, logs_dir / "consumer.log")
        await consumer.ready()
        first = [wire_for(tenant, debtor, creditor, 100 + i) for i in range(10)]
        for wire in first:
            await send_payment(settings, wire)
        await eventually(lambda: _recorded(uow_factory, tenant, 10), timeout=60)

        core.process.kill()
        during = [wire_for(tenant, debtor, creditor, 1_000 + i) for i in range(30)]
        for wire in during:
            await send_payment(settings, wire)

        async def paused() -> bool:
            return queue_state(service_env.vhost, queue)["consumers"] == 0

        await eventually(paused, timeout=60)
        short_lived = wire_for(tenant, debtor, creditor, 99_999, ttl_seconds=1)
        await send_payment(settings, short_lived)
        await asyncio.sleep(2)  # paused for longer than its TTL

        async def held_by_the_broker() -> bool:  # every payment sent during the outage, back from the delay queues
            return queue_state(service_env.vhost, queue) == {"consumers": 0, "ready": len(during) + 1}

        await eventually(held_by_the_broker, timeout=30, poll=1)
        workers = await pool_status(
            uow_factory, management(), Topology.from_settings(settings), service_env.vhost, None
        )
        readyz = await get(consumer, "/readyz")
        metrics = (await get(consumer, "/metrics")).text

        core = start_corebank(database_url, logs_dir / "core-after.log", port=core.process.port)
        await wait_ready(core)
        await eventually(lambda: _recorded(uow_factory, tenant, 40), timeout=90)
        [expired] = await dead_letters(channel, settings, 1)
        await asyncio.sleep(1.0)
        readyz_after = await get(consumer, "/readyz")
        metrics_after = (await get(consumer, "/metrics")).text
        log = consumer.log()
    finally:
        if consumer is not None:
            consumer.stop()
        core.process.stop()

    assert readyz.status_code == 503
    [basic] = [w for w in workers if w.pool == "basic"]
    # `remit workers status`, the console: this consumer paused the pool (the session database may still hold
    # the heartbeat of another test's consumer, which neither runs a core nor pauses)
    assert basic.paused == 1
    assert "circuit breaker open" in readyz.json()["checks"]["core_banking"]
    assert 'remit_core_breaker_state{state="open"} 1.0' in metrics
    # Ready again as far as this consumer's own parts go. (The whole answer may still be 503 in a full run:
    # its relay check counts rows other tests left unpublished in the shared session database.)
    after = readyz_after.json()["checks"]
    assert {name: after[name] for name in ("core_banking", "consumers", "broker", "database")} == dict.fromkeys(
        ("core_banking", "consumers", "broker", "database"), True
    ), after
    assert 'remit_core_breaker_state{state="closed"} 1.0' in metrics_after
    assert "remit_core_breaker_opened_total 1.0" in metrics_after
    assert log.count("circuit breaker opened") == 1
    assert log.count("circuit breaker closed") == 1
    assert expired.headers[headers.REASON] == "expired"  # TTL still holds while paused
    assert expired.message_id == short_lived["message_id"]
    # Zero retries_exhausted: the only dead letter is the expired one (dead_letters took exactly it, and
    # nothing else is there).
    assert await dead_letters_left(channel, settings) == 0
    ledger = await check_ledger(database_url)
    assert ledger.booked_keys == len(first) + len(during)  # the core's journal: one transfer per payment
    records = await remit_records(uow_factory, tenant)
    keys = await core_keys(database_url)
    assert {f"{tenant}:{r.message_id}": ("booked", r.core_transfer_id) for r in records} == keys
    # An attempt is recorded only for a request that was sent to the core: a payment in hand when the
    # breaker opened went back to the broker (nothing sent, no retry spent), never to a retry queue.
    attempts = await _attempts(uow_factory, tenant)
    assert attempts, "the requests to the dead core are recorded as attempts"
    sent = {"CoreBankingUnavailable", "CoreOutcomeUnknown"}
    assert {error for error, _ in attempts} <= sent | {"MessageExpired"}, attempts  # and the short-lived one
    assert max(attempt for _, attempt in attempts) <= 3  # the threshold: later ones were never sent
    await drop_database(database_url)


async def _attempts(uow: UnitOfWorkFactory, tenant: str) -> list[tuple[str, int]]:
    query = text("SELECT error_type, attempt FROM delivery_attempts WHERE tenant_id = :t")
    async with uow() as u:
        return [(row.error_type, row.attempt) for row in await u.connection.execute(query, {"t": tenant})]


async def _recorded(uow: UnitOfWorkFactory, tenant: str, n: int) -> bool:
    return len(await remit_records(uow, tenant)) >= n


async def test_a_lone_payment_opens_the_breaker_before_its_retries_run_out_with_the_defaults(
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    logs_dir: Path,
) -> None:
    """With the default threshold and retries, one payment to a dead core (one failed request per attempt, no
    other traffic) is paused, not dead-lettered as retries_exhausted, and booked once the core is back."""
    database_url = await create_corebank_database()
    core = start_corebank(database_url, logs_dir / "core-before.log")
    consumer: ServiceProcess | None = None
    try:
        await wait_ready(core)
        async with core.client(timeout=10) as client:
            debtor, creditor = await open_account(client, 10_000), await open_account(client)
        tenant = await fresh_tenant(uow_factory)
        env = service_env.env(**core.remit_env(), REMIT_CORE_BANKING_PROBE_INTERVAL_SECONDS="0.3")
        consumer = ServiceProcess.consumer(env, logs_dir / "consumer.log")
        await consumer.ready()
        core.process.kill()
        wire = wire_for(tenant, debtor, creditor, 500)
        await send_payment(settings, wire)

        async def not_ready() -> bool:
            assert consumer is not None
            return (await get(consumer, "/readyz")).status_code == 503

        await eventually(not_ready, timeout=30)
        await asyncio.sleep(3)  # longer than every retry delay (0.2 s, 0.5 s, 1 s): nothing may run out
        left_while_down = await dead_letters_left(channel, settings)
        core = start_corebank(database_url, logs_dir / "core-after.log", port=core.process.port)
        await wait_ready(core)
        await eventually(lambda: _recorded(uow_factory, tenant, 1), timeout=60)
    finally:
        if consumer is not None:
            consumer.stop()
        core.process.stop()
    assert left_while_down == 0
    assert (await check_ledger(database_url)).booked_keys == 1
    await drop_database(database_url)

"""Issue 37, A: a refused payment is dead-lettered once, whatever crashes when. remit's consumer, a real process,
books into the reference core (another real process); the archiver files dead letters (a third).

The window: the core refuses, remit commits (releasing the idempotency record), publishes the dead letter and
waits to ack, acks going out in delivery order. Killed there, the broker redelivers; the core answers the same key
with the same refusal and remit dead-letters the payment again. The store must keep one row per payment, the first
one, telling when the payment last failed."""

import json
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest
from sqlalchemy import select

from app.messaging.topology import Topology
from app.settings import Settings
from app.storage.tables import dead_letters, delivery_attempts
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.cli import remit
from tests.utils.core_world import core_keys, wire_for
from tests.utils.corebank import CoreBank, open_account
from tests.utils.dead_letters import queue_depth_now, start_archiver
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.world import fresh_tenant, send_payment

pytestmark = pytest.mark.integration

REFUSED = 20
KILL_AFTER = 10  # dead letters out before the armed consumer kills itself, none of their deliveries acked yet


def consumer_on(core: CoreBank, env: ServiceEnv, log: Path, **options: Any) -> ServiceProcess:
    return ServiceProcess.consumer(env.env(**core.remit_env()), log, **options)


async def failed_attempts(uow: UnitOfWorkFactory, tenant: str) -> dict[UUID, list[datetime]]:
    """When the consumer dead-lettered each message (it records the attempt, then publishes, with one clock)."""
    query = select(delivery_attempts.c.message_id, delivery_attempts.c.at).where(
        delivery_attempts.c.tenant_id == tenant, delivery_attempts.c.outcome == "dead_lettered"
    )
    found: dict[UUID, list[datetime]] = defaultdict(list)
    async with uow() as u:
        for message_id, at in await u.connection.execute(query.order_by(delivery_attempts.c.at)):
            found[message_id].append(at)
    return found


async def stored(uow: UnitOfWorkFactory, tenant: str) -> list[Any]:
    """Every row of the store for the tenant: rows, not distinct message ids."""
    query = select(dead_letters).where(dead_letters.c.tenant_id == tenant).order_by(dead_letters.c.dead_letter_id)
    async with uow() as u:
        return list((await u.connection.execute(query)).all())


async def test_a_refusal_redelivered_after_a_crash_is_one_dead_letter(
    core: CoreBank,
    client: httpx.AsyncClient,
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    logs_dir: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    debtor, closed = await open_account(client, 1_000_000), await open_account(client, status="closed")
    wires = [wire_for(tenant, debtor, closed, 100 + i) for i in range(REFUSED)]
    archiver = start_archiver(service_env.env(), logs_dir / "archiver.log")
    armed = consumer_on(core, service_env, logs_dir / "armed.log", kill_after_dead_letters=KILL_AFTER)
    consumer: ServiceProcess | None = None
    try:
        await armed.ready()
        for wire in wires:
            await send_payment(settings, wire)
        assert armed.wait_exit(timeout=60) == -9, armed.log()  # SIGKILLed at the fault point
        consumer = consumer_on(core, service_env, logs_dir / "consumer.log")
        work_queue = Topology.from_settings(settings).tier_queue("basic")

        async def settled() -> bool:
            attempts = await failed_attempts(uow_factory, tenant)
            last_stored: dict[UUID, datetime] = {}
            for row in await stored(uow_factory, tenant):
                last_stored[row.message_id] = max(
                    row.last_failed_at, last_stored.get(row.message_id, row.last_failed_at)
                )
            return (
                len(attempts) == REFUSED
                and all(last_stored.get(m) == times[-1] for m, times in attempts.items())
                and await queue_depth_now(service_env.amqp_url, work_queue) == 0
                and await queue_depth_now(service_env.amqp_url, settings.dead_letter_queue) == 0
            )

        await eventually(settled, timeout=90, poll=0.5)
    finally:
        armed.kill()
        if consumer is not None:
            consumer.stop()
        archiver.stop()

    attempts = await failed_attempts(uow_factory, tenant)
    twice = {m: times for m, times in attempts.items() if len(times) > 1}
    assert twice, "the crash was not in the window: no refusal was dead-lettered twice by the consumer"
    keys = await core_keys(core.database_url)
    assert [keys[f"{tenant}:{w['message_id']}"][0] for w in wires] == ["rejected"] * REFUSED

    rows = await stored(uow_factory, tenant)
    print(f"{len(rows)} dead letters for {REFUSED} refused payments ({len(twice)} dead-lettered twice)")
    assert sorted(str(r.message_id) for r in rows) == sorted(w["message_id"] for w in wires)
    for row in rows:
        times = attempts[row.message_id]
        assert (row.reason, row.status) == ("account_closed", "open")
        assert (row.first_failed_at, row.last_failed_at) == (times[0], times[-1])
    code, out = await remit(service_env.env(), "dlq", "stats", "--tenant", tenant, "--json")
    assert code == 0, out
    [total] = json.loads(out)["total"]
    assert (total["count"], total["amount_cents"]) == (REFUSED, sum(w["amount_cents"] for w in wires))

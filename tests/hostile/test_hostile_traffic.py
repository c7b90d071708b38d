"""The short hostile-input run (the long one is bench/hostile_input.py): a few hundred messages generated
with hypothesis, published by tenant A as its own RabbitMQ user, while tenant B's valid payments flow.

Afterwards, from the database alone: no consumer or archiver crashed; every message RabbitMQ accepted
from A is either A's own booked payment or a dead letter filed under A; B's payments are each booked
exactly once and B has no dead letter.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.dead_letters import start_archiver
from tests.utils.hostile_traffic import Cast, by_kind, generate, random_seed, send_all, settle, victim_payments
from tests.utils.services import ServiceEnv, ServiceProcess
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import fresh_tenant

pytestmark = pytest.mark.integration

HOSTILE = 300
HONEST = 60


@pytest.fixture
def archiver(service_env: ServiceEnv, logs_dir: Path) -> Iterator[ServiceProcess]:
    process = start_archiver(service_env.env(), logs_dir / "archiver.log")
    yield process
    process.stop()


async def test_hostile_traffic_touches_nothing_but_the_attackers_own_money(
    uow_factory: UnitOfWorkFactory,
    engine: AsyncEngine,  # the schema owner: row-level security hides nothing from it
    tenant_users: TenantUsers,
    consumer: ServiceProcess,
    archiver: ServiceProcess,
) -> None:
    attacker, victim = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    honest = victim_payments(victim, HONEST)
    victim_ids = [str(w["message_id"]) for w in honest]
    a = tenant_users.publisher(attacker)
    cast = Cast(attacker, victim, victim_ids, attacker_user=a.user)
    seed = random_seed()
    messages = generate(cast, HOSTILE, seed)

    sent = await send_all(a, tenant_users.publisher(victim), messages, honest)
    outcome = await settle(engine, cast, sent, victim_ids, timeout=180)

    context = f"seed {seed}; accepted {by_kind(sent.accepted)}; refused {len(sent.refused)}"
    assert consumer.proc.poll() is None, f"the consumer died ({context})"
    assert archiver.proc.poll() is None, f"the archiver died ({context})"
    assert outcome.victim_booked == dict.fromkeys(victim_ids, 1), context
    assert outcome.victim_dead_letters == 0, context
    lost = [(m.kind, m.sha256[:12]) for m in outcome.unaccounted]
    assert not lost, f"accepted by RabbitMQ but neither booked for A nor dead-lettered under A: {lost} ({context})"
    assert outcome.attacker_dead_letters > 0  # the run really was hostile
    for process in (consumer, archiver):  # handled, not survived: no failure that could not be recorded
        assert '"level": "ERROR"' not in process.log(), context

"""Exactly one transfer per payment when the call to the core, remit's commit and the ack can each fail
(issue 14, item 5, short form): remit's consumers (real processes) book in the reference core (a real
process with its own database) while a fault plan drawn by Hypothesis from the seed (tests/chaos/core_plan.py,
`short_shape`) runs:

- consumers SIGKILL themselves after the core answered a booking and before remit's commit (the fault point
  `after_core`: the core committed, remit did not; the redelivery must be healed by the idempotency key),
- the core drops its answers after committing (`drop_rate`: the response is lost),
- the core is killed and stays down for 30 s, then restarts on the same database (the breaker pauses the
  consumers meanwhile),
- consumers are SIGKILLed anywhere, every connection to remit's database is terminated
  (pg_terminate_backend) and every AMQP connection of remit's vhost is force-closed (the connection-level
  equivalents of restarting remit's PostgreSQL and RabbitMQ; the real restarts are in the long run,
  bench/chaos_core_long.py, because they disrupt everything else on the machine).

The end checks are tests/chaos/core_run.py's: the core's journal holds exactly one transfer per payment, money
is conserved in the core, remit's records equal the core's journal, nothing dead-lettered or left in a queue.
REMIT_CHAOS_SEED replays a run's plan and payments (the seed and the plan are printed).
"""

import os
from pathlib import Path

import pytest

from app.storage.unit_of_work import UnitOfWorkFactory
from tests.chaos.config import new_seed
from tests.chaos.core_plan import draw_plan, short_shape
from tests.chaos.core_run import CoreChaos, CoreChaosConfig
from tests.utils.corebank import create_corebank_database
from tests.utils.services import ServiceEnv, drop_database

pytestmark = pytest.mark.chaos


@pytest.mark.timeout(420)
async def test_exactly_one_transfer_per_payment_through_core_faults_and_crashes(
    service_env: ServiceEnv, uow_factory: UnitOfWorkFactory, logs_dir: Path
) -> None:
    seed = int(os.environ.get("REMIT_CHAOS_SEED") or new_seed())
    plan = draw_plan(seed, short_shape())
    config = CoreChaosConfig(seed=seed, plan=plan, logs=logs_dir, payments=600, tenants=3, publish_seconds=40.0)
    core_database_url = await create_corebank_database()
    result = await CoreChaos(config, service_env, uow_factory, core_database_url).run()
    print(result.summary())

    assert result.recovered_in is not None, f"seed {seed}: not every payment recorded in time\n{result.summary()}"
    assert result.violations == [], f"seed {seed}\n{result.summary()}"
    assert result.core_booked == 600  # exactly one transfer per payment
    assert result.remit_records == 600
    assert result.dead_letters == 0
    # The run did what it claims: the plan's faults were injected, and at least one consumer died between the
    # core's commit and remit's.
    for kind in ("core_down", "pg_terminate", "amqp_close", "drop_answers", "consumer_kill"):
        assert result.injected[kind] == plan.count(kind), f"seed {seed}: {kind} {result.injected[kind]} of {plan}"
    assert result.consumers["died_at_core"] >= 1, f"seed {seed}: no consumer died at the fault point"
    assert result.cut["AMQP"] >= 1, f"seed {seed}: no AMQP connection was closed"
    await drop_database(core_database_url)

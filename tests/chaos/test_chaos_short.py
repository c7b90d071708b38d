"""The short chaos run: a few thousand payments across several tenants while consumers, the relay,
PostgreSQL connections and AMQP connections are killed at seeded random points; then the ledger check.

REMIT_CHAOS_SEED replays a run's fault plan and workload (the seed is printed).
"""

import os
from pathlib import Path

import pytest

from tests.chaos.config import ChaosConfig, new_seed, short_faults
from tests.chaos.rig import ChaosRig

pytestmark = pytest.mark.chaos


@pytest.mark.timeout(240)
async def test_money_is_conserved_through_crashes_and_disconnects(tmp_path: Path) -> None:
    seed = int(os.environ.get("REMIT_CHAOS_SEED") or new_seed())
    config = ChaosConfig(
        seed=seed,
        logs=tmp_path / "chaos",
        tenants=4,
        batches=15,
        rows_per_batch=200,
        consumers=2,
        fault_window=50.0,
        faults=short_faults(),
        settle_timeout=60.0,
    )
    result = await ChaosRig(config).run()
    print(result.summary())

    assert result.settled_in is not None, f"seed {seed}: not quiescent in time\n{result.summary()}"
    assert result.report.ok, f"seed {seed}: the ledger check failed\n{result.summary()}"
    # The check is not blind: each kind of damage, applied to this run's ledger and rolled back, is caught.
    assert result.drill, "the drill did not run"
    assert all(result.drill.values()), result.drill
    # The run did what it claims: every planned fault was injected and every outcome was exercised.
    planned = short_faults()
    for kind in ("consumer_kill", "relay_kill", "consumer_pause", "pg_terminate", "amqp_close"):
        assert result.faults[kind] == planned[kind], f"{kind}: {result.faults[kind]} of {planned[kind]}"
    assert result.report.accepted >= 3000
    assert result.report.processed > 0
    assert result.report.dead_lettered["account_closed"] > 0
    assert result.report.dead_lettered["retries_exhausted"] > 0
    assert result.report.expired == config.rows_per_batch * config.expired_batches

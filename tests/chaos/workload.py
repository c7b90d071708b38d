"""The chaos run's workload: tenants' batches with a seeded share of accounts the simulated core treats badly.

The test-only core's failure rules (`service_env`) and the accounts written into the batches are one
decision, kept here.
"""

import asyncio
import csv
import json
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from app.errors import BatchRefused, LimitExceeded
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.chaos.config import ChaosConfig
from tests.utils.world import COLUMNS

CLOSED_ACCOUNT = "555000111"  # core banking refuses it for good: account_closed
OUTAGE_ACCOUNT = "555000222"  # times out on every attempt: retries_exhausted
FLAKY_ACCOUNT = "555000333"  # times out on its first two attempts, then succeeds
CURRENCIES = ("AUD", "AUD", "AUD", "NZD", "USD", "EUR")

Log = Callable[[str], None]


def service_env(config: ChaosConfig) -> dict[str, str]:
    """The services' environment: the simulated core's rules for the accounts above, short retry delays."""
    return {
        "TEST_CORE_CLOSED_ACCOUNTS": json.dumps([CLOSED_ACCOUNT]),
        "TEST_CORE_FLAKY_ACCOUNTS": json.dumps({OUTAGE_ACCOUNT: 1000, FLAKY_ACCOUNT: 2}),
        "TEST_CORE_TRANSIENT_RATE": str(config.transient_rate),
        "REMIT_RETRY_DELAYS_SECONDS": "[0.2, 0.5, 1.0]",
        "REMIT_RELAY_BATCH_SIZE": "100",
        "REMIT_LOG_LEVEL": "WARNING",
    }


class Workload:
    """Batches spread over the fault window, a few back-dated so that they expire before delivery."""

    def __init__(self, config: ChaosConfig, rng: random.Random, log: Log) -> None:
        self.config = config
        self.rng = rng
        self.log = log
        self.batches_submitted = 0

    async def submit_all(self, tenants: list[str], uow: UnitOfWorkFactory, settings: Settings) -> None:
        """Tenant 0 gets the back-dated batches (its TTL is the short one)."""
        c = self.config
        total = c.batches + c.expired_batches
        order = ["expired"] * c.expired_batches + ["live"] * c.batches
        self.rng.shuffle(order)
        gap = c.fault_window * 0.85 / max(total, 1)
        for n, kind in enumerate(order):
            tenant = tenants[0] if kind == "expired" else self.rng.choice(tenants)
            path = self.write_batch(n, tenant)
            now = datetime.now(UTC) - timedelta(hours=1) if kind == "expired" else None
            await self._submit(SubmitBatch(tenant, path), uow, settings, now)
            await asyncio.sleep(gap)

    async def _submit(
        self, command: SubmitBatch, uow: UnitOfWorkFactory, settings: Settings, now: datetime | None
    ) -> None:
        """Submit, retrying through database faults. The outbox, not this, is the truth of what was accepted."""
        for attempt in range(20):
            try:
                await submit_batch(command, uow, settings, now=now)
                self.batches_submitted += 1
                return
            except (BatchRefused, LimitExceeded) as exc:
                if "already submitted" in str(exc):  # committed, but the answer was lost to a fault
                    self.batches_submitted += 1
                    return
                raise
            except Exception as exc:
                self.log(f"submit attempt {attempt + 1} failed ({type(exc).__name__}); retrying")
                await asyncio.sleep(0.5)
        raise RuntimeError(f"could not submit {command.path} through 20 attempts")

    def write_batch(self, n: int, tenant: str) -> Path:
        c, rng = self.config, self.rng
        path = c.logs / f"batch-{n:03d}-{tenant}.csv"
        rows = []
        for i in range(c.rows_per_batch):
            roll = rng.random()
            if roll < c.closed_share:
                creditor = CLOSED_ACCOUNT
            elif roll < c.closed_share + c.outage_share:
                creditor = OUTAGE_ACCOUNT
            elif roll < c.closed_share + c.outage_share + c.flaky_share:
                creditor = FLAKY_ACCOUNT
            else:
                creditor = str(rng.randint(100_000_000, 899_999_999))
            rows.append(
                {
                    "payment_reference": f"CH{c.seed % 10_000}-{n:03d}-{i:05d}-{rng.getrandbits(24):06x}",
                    "amount_cents": rng.randint(1, 5_000_000),
                    "currency": rng.choice(CURRENCIES),
                    "debtor_bsb": "012-345",
                    "debtor_account": str(rng.randint(100_000_000, 899_999_999)),
                    "creditor_bsb": "033-001",
                    "creditor_account": creditor,
                }
            )
        with path.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
        return path

"""The chaos rig: remit as real processes on a fresh database and vhost, faults at seeded random points.

Processes (tests/chaos/processes.py): `consumers` x `faststream run app.main:app --port N`,
`python -m app.cli relay` and `faststream run app.deadletters.archiver_app:app` (the archiver), the consumers
with the test-only core's failure rules (tests/support/core.py: a closed account, an account in an outage, a
flaky account, a transient failure rate) and short retry delays. While batches for several tenants are submitted
(tests/chaos/workload.py), a fault plan drawn from the seed runs (tests/chaos/faults.py). Then it waits for
quiescence (outbox published, every message terminal, every queue empty incl. unacked: tests/chaos/checks.py)
and runs the ledger check (tests/chaos/ledger_check.py) as the schema owner.
"""

import asyncio
import random
import secrets
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncEngine

from app.resources import uow_factory_for
from app.settings import Settings
from app.storage.engine import make_engine
from app.storage.migrations import upgrade_to_head
from app.tenancy.tenants import AddTenant, add_tenant
from tests.chaos.checks import OutcomeCounters, outbox_progress, settle
from tests.chaos.config import FAULT_KINDS, ChaosConfig
from tests.chaos.faults import Faults
from tests.chaos.ledger_check import LedgerReport, check_ledger, drill
from tests.chaos.processes import Processes
from tests.chaos.workload import Workload, service_env
from tests.utils.services import (
    ServiceEnv,
    app_database_url,
    create_database,
    create_vhost,
    delete_vhost,
    drop_database,
)

Log = Callable[[str], None]


@dataclass
class ChaosResult:
    seed: int
    database: str
    vhost: str
    faults: Counter[str]
    self_kills_armed: Counter[str]
    unexpected_exits: list[str]
    startup_exits: int
    batches: int
    duplicates_absorbed: int
    retries_seen: int
    settled_in: float | None
    elapsed: float
    report: LedgerReport
    drill: dict[str, bool] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.report.ok and self.settled_in is not None

    def problems(self) -> list[str]:
        out = list(self.report.violations)
        if self.settled_in is None:
            out.insert(0, "the system did not reach quiescence in time")
        return out

    def summary_rows(self) -> list[tuple[str, str]]:
        r = self.report
        rows = [("seed", str(self.seed))]
        for kind in FAULT_KINDS:
            if self.faults[kind] or kind in self.self_kills_armed:
                fired = str(self.faults[kind])
                if kind in self.self_kills_armed:
                    fired += f" (armed {self.self_kills_armed[kind]})"
                rows.append((f"fault: {kind}", fired))
        rows += [
            ("faults total", str(sum(self.faults.values()))),
            ("unexpected process exits", str(len(self.unexpected_exits))),
            ("exits of processes started while the broker was down", str(self.startup_exits)),
            ("batches", str(self.batches)),
            ("accepted", str(r.accepted)),
            ("processed", str(r.processed)),
        ]
        rows += [(f"dead-lettered: {reason}", str(n)) for reason, n in sorted(r.dead_lettered.items())]
        rows += [
            ("expired", str(r.expired)),
            ("in no terminal state", str(r.unsettled)),
            ("unpublished in outbox", str(r.unpublished)),
            ("retries (delivery_attempts retrying)", str(r.attempts_by_outcome.get("retrying", 0))),
            ("duplicates absorbed (at least)", str(self.duplicates_absorbed)),
            ("stale dead letters (paid later by another copy)", str(r.stale_dead_letters)),
            ("violations", str(len(r.violations))),
            ("settled after faults (s)", f"{self.settled_in:.1f}" if self.settled_in is not None else "no"),
            ("elapsed (s)", f"{self.elapsed:.1f}"),
        ]
        return rows

    def summary(self) -> str:
        rows = self.summary_rows()
        width = max(len(k) for k, _ in rows)
        lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
        lines += [f"  VIOLATION: {p}" for p in self.problems()[:20]]
        lines += [f"  drill: {name}: {'caught' if hit else 'MISSED'}" for name, hit in self.drill.items()]
        return "\n".join(lines)


class ChaosRig:
    """One run: set up, start the processes, submit while injecting, settle, check, clean up."""

    def __init__(self, config: ChaosConfig, log: Log = print) -> None:
        self.config = config
        self.log = log
        self.rng = random.Random(config.seed)  # one generator for plan, workload and picks: a seed replays all
        self.workload = Workload(config, self.rng, log)
        self.processes: Processes | None = None
        self.injector: Faults | None = None
        self._started = time.monotonic()
        self.phase = "setting up"
        self.database_url = ""
        self.vhost = ""
        self._engine: AsyncEngine | None = None

    # What a progress display reads while the run goes on.

    @property
    def faults(self) -> Counter[str]:
        """Faults that happened: injected ones and armed self-kills that fired."""
        injected = self.injector.injected if self.injector else Counter[str]()
        fired = self.processes.self_kills if self.processes else Counter[str]()
        return injected + fired

    @property
    def unexpected(self) -> list[str]:
        return self.processes.unexpected if self.processes else []

    @property
    def batches_submitted(self) -> int:
        return self.workload.batches_submitted

    async def progress(self) -> dict[str, int]:
        """Accepted, settled and unpublished so far (for a progress display)."""
        return await outbox_progress(self._engine) if self._engine is not None else {}

    async def run(self) -> ChaosResult:
        c = self.config
        c.logs.mkdir(parents=True, exist_ok=True)
        self.log(f"chaos seed {c.seed} (rerun with the same seed to replay the same fault plan)")
        self.database_url = await create_database()
        await upgrade_to_head(self.database_url)
        self.vhost = create_vhost()
        self.log(f"database {self.database_url.rsplit('/', 1)[1]}, vhost {self.vhost}, logs {c.logs}")
        self._engine = make_engine(self.database_url, pool_size=3)
        ok = False
        try:
            result = await self._run(self._engine)
            ok = result.ok
            return result
        finally:
            if self.processes is not None:
                self.processes.stop_all()
            await self._engine.dispose()
            if ok or not c.keep_on_failure:
                await drop_database(self.database_url)
                delete_vhost(self.vhost)

    async def _run(self, engine: AsyncEngine) -> ChaosResult:
        c = self.config
        uow = uow_factory_for(engine)
        env = ServiceEnv(self.database_url, self.vhost, extra=service_env(c))
        settings = Settings(
            database_url=app_database_url(self.database_url),
            migration_database_url=self.database_url,
            amqp_url=env.amqp_url,
        )
        tenants = [f"chaos{i}{secrets.token_hex(3)}" for i in range(c.tenants)]
        for i, tenant in enumerate(tenants):
            ttl = 600 if i == 0 else 86_400  # tenant 0 also gets the back-dated (expired) batches
            await add_tenant(AddTenant(tenant, f"Chaos {i}", default_ttl_seconds=ttl), uow)
        processes = self.processes = Processes(c, env, self.rng, self.log)
        processes.start_all()
        database = self.database_url.rsplit("/", 1)[1]
        injector = self.injector = Faults(c, processes, database, self.vhost, self.rng, self.log)
        counters = OutcomeCounters(processes)

        self.phase = "faults"
        plan = injector.plan()
        self.log("fault plan: " + ", ".join(f"{t:.1f}s {k}" for t, k in plan))
        stop = asyncio.Event()
        background = [
            asyncio.create_task(processes.supervise(stop), name="supervisor"),
            asyncio.create_task(counters.scrape_until(stop), name="metrics"),
        ]
        try:
            await asyncio.gather(self.workload.submit_all(tenants, uow, settings), injector.inject(plan))
            self.phase = "settling"
            faults_done = time.monotonic()
            self.log(f"faults done ({sum(self.faults.values())}); waiting for quiescence")
            settled = await settle(engine, self.vhost, processes, c.settle_timeout)
            settled_in = time.monotonic() - faults_done if settled else None
            await counters.scrape()
        finally:
            stop.set()
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
        self.phase = "checking"
        async with engine.connect() as conn:
            report = await check_ledger(conn)
        drilled: dict[str, bool] = {}
        if c.drill and report.processed:
            async with engine.connect() as conn:
                drilled = await drill(conn)
        return ChaosResult(
            seed=c.seed,
            database=database,
            vhost=self.vhost,
            faults=self.faults,
            self_kills_armed=injector.armed,
            unexpected_exits=processes.unexpected,
            startup_exits=processes.startup_exits,
            batches=self.workload.batches_submitted,
            duplicates_absorbed=counters.duplicates,
            retries_seen=counters.retries,
            settled_in=settled_in,
            elapsed=time.monotonic() - self._started,
            report=report,
            drill=drilled,
        )

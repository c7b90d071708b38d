"""The chaos rig: remit as real processes on a fresh database and vhost, faults at seeded random points.

Processes: `consumers` x `faststream run app.main:app --port N`, `python -m app.cli relay` and
`faststream run app.deadletters.main:app` (the archiver), all with the core-banking simulator's rules
(a closed account, an account in an outage, a flaky account, a transient failure rate) and short retry
delays. While batches for several tenants are submitted, a fault plan drawn from the seed runs:

  consumer_kill             SIGKILL a consumer (the supervisor restarts it)
  consumer_kill_at_commit   restart a consumer with REMIT_FAULT_KILL_AFTER_COMMITS=n: it SIGKILLs itself
                            after its n-th commit, before the acks (the most dangerous point)
  relay_kill                SIGKILL the outbox relay
  relay_kill_at_publish     restart the relay with REMIT_FAULT_KILL_AFTER_PUBLISHES=n: it SIGKILLs itself
                            after the broker confirmed a batch, before marking it published
  consumer_pause            SIGSTOP a consumer for a few seconds, then SIGCONT
  pg_terminate              pg_terminate_backend() every connection to the test database
  amqp_close                force-close every connection of the test vhost (management API)
  broker_restart            rabbitmqctl stop_app / start_app: disrupts the whole broker (long run only)

Then it waits for quiescence (outbox published, every message terminal, every queue empty incl. unacked)
and runs the ledger check (tests/chaos/ledger_check.py) as the schema owner.
"""

import asyncio
import contextlib
import csv
import json
import random
import secrets
import signal
import socket
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import asyncpg
import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.bootstrap import uow_factory_for
from app.errors import BatchRefused
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.engine import make_engine
from app.storage.migrations import upgrade_to_head
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.tenants import AddTenant, add_tenant
from tests.chaos.ledger_check import LedgerReport, check_ledger, drill
from tests.utils.services import (
    MANAGEMENT_AUTH,
    MANAGEMENT_URL,
    PG_ADMIN_DSN,
    ServiceEnv,
    ServiceProcess,
    app_database_url,
    create_database,
    create_vhost,
    delete_vhost,
    drop_database,
    free_port,
)
from tests.utils.world import COLUMNS

CLOSED_ACCOUNT = "555000111"  # core banking refuses it for good: permanent_failure
OUTAGE_ACCOUNT = "555000222"  # times out on every attempt: retries_exhausted
FLAKY_ACCOUNT = "555000333"  # times out on its first two attempts, then succeeds
CURRENCIES = ("AUD", "AUD", "AUD", "NZD", "USD", "EUR")

FAULT_KINDS = (
    "consumer_kill",
    "consumer_kill_at_commit",
    "relay_kill",
    "relay_kill_at_publish",
    "consumer_pause",
    "pg_terminate",
    "amqp_close",
    "broker_restart",
)
SELF_KILLS = {"consumer": "consumer_kill_at_commit", "relay": "relay_kill_at_publish"}

Log = Callable[[str], None]


@dataclass
class ChaosConfig:
    seed: int
    logs: Path
    tenants: int = 4
    batches: int = 16  # submitted across the fault window
    rows_per_batch: int = 200
    consumers: int = 2
    fault_window: float = 60.0  # seconds over which faults and batches are spread
    faults: Mapping[str, int] = field(default_factory=dict)  # kind -> how many
    pause_seconds: tuple[float, float] = (2.0, 5.0)
    broker_down_seconds: tuple[float, float] = (1.0, 5.0)
    settle_timeout: float = 90.0
    transient_rate: float = 0.02
    closed_share: float = 0.01
    outage_share: float = 0.005
    flaky_share: float = 0.02
    expired_batches: int = 1  # batches submitted with a past timestamp: they expire before delivery
    keep_on_failure: bool = True  # keep the database and vhost for a post-mortem when the check fails
    drill: bool = True  # afterwards, break the ledger in known ways (rolled back): the check must notice each


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


class Slot:
    """One service role (consumer #n, relay, archiver): its current process and how it may die."""

    def __init__(self, name: str, role: str) -> None:
        self.name = name
        self.role = role
        self.proc: ServiceProcess | None = None
        self.armed: str | None = None  # the self-kill fault it carries, if any
        self.expected_death = False
        self.paused = False
        self.starts = 0
        self.started_at = 0.0


class ChaosRig:
    def __init__(self, config: ChaosConfig, log: Log = print) -> None:
        self.config = config
        self.log = log
        self.rng = random.Random(config.seed)
        self.faults: Counter[str] = Counter()
        self.armed: Counter[str] = Counter()
        self.unexpected: list[str] = []
        self.startup_exits = 0  # processes started while the broker was down, which exit instead of waiting
        self._broker_down: list[tuple[float, float]] = []  # (stopped, back) of each broker restart
        self.batches_submitted = 0
        self.tenants: list[str] = []
        self.slots: list[Slot] = []
        self._metrics: dict[int, tuple[int, int]] = {}  # pid -> (duplicates, retries) last scraped
        self._stop = asyncio.Event()
        self._started = time.monotonic()
        self.phase = "setting up"
        self.database_url = ""
        self.vhost = ""
        self._engine: AsyncEngine | None = None

    # ---------------------------------------------------------------- life cycle

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
            result = await self._run()
            ok = result.ok
            return result
        finally:
            for slot in self.slots:
                self._stop_slot(slot)
            await self._engine.dispose()
            if ok or not c.keep_on_failure:
                await drop_database(self.database_url)
                delete_vhost(self.vhost)

    async def _run(self) -> ChaosResult:
        c = self.config
        assert self._engine is not None
        uow = uow_factory_for(self._engine)
        env = ServiceEnv(self.database_url, self.vhost, extra=self._service_env())
        settings = Settings(
            database_url=app_database_url(self.database_url),
            migration_database_url=self.database_url,
            amqp_url=env.amqp_url,
        )
        self.tenants = [f"chaos{i}{secrets.token_hex(3)}" for i in range(c.tenants)]
        for i, tenant in enumerate(self.tenants):
            ttl = 600 if i == 0 else 86_400  # tenant 0 also gets the back-dated (expired) batches
            await add_tenant(AddTenant(tenant, f"Chaos {i}", default_ttl_seconds=ttl), uow)
        self.env = env
        self.slots = [Slot(f"consumer{i}", "consumer") for i in range(c.consumers)]
        self.slots += [Slot("relay", "relay"), Slot("archiver", "archiver")]
        for slot in self.slots:
            self._start(slot)

        self.phase = "faults"
        plan = self._plan()
        self.log("fault plan: " + ", ".join(f"{t:.1f}s {k}" for t, k in plan))
        background = [
            asyncio.create_task(self._supervise(), name="supervisor"),
            asyncio.create_task(self._scrape_metrics(), name="metrics"),
        ]
        try:
            await asyncio.gather(self._submit_all(uow, settings), self._inject(plan))
            self.phase = "settling"
            faults_done = time.monotonic()
            self.log(f"faults done ({sum(self.faults.values())}); waiting for quiescence")
            settled = await self._settle(c.settle_timeout)
            settled_in = time.monotonic() - faults_done if settled else None
            await self._scrape_once()
        finally:
            self._stop.set()
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
        self.phase = "checking"
        async with self._engine.connect() as conn:
            report = await check_ledger(conn)
        drilled: dict[str, bool] = {}
        if c.drill and report.processed:
            async with self._engine.connect() as conn:
                drilled = await drill(conn)
        duplicates = sum(d for d, _ in self._metrics.values())
        retries = sum(r for _, r in self._metrics.values())
        return ChaosResult(
            seed=c.seed,
            database=self.database_url.rsplit("/", 1)[1],
            vhost=self.vhost,
            faults=self.faults,
            self_kills_armed=self.armed,
            unexpected_exits=self.unexpected,
            startup_exits=self.startup_exits,
            batches=self.batches_submitted,
            duplicates_absorbed=duplicates,
            retries_seen=retries,
            settled_in=settled_in,
            elapsed=time.monotonic() - self._started,
            report=report,
            drill=drilled,
        )

    def _service_env(self) -> dict[str, str]:
        c = self.config
        return {
            "REMIT_SIMULATOR_CLOSED_ACCOUNTS": json.dumps([CLOSED_ACCOUNT]),
            "REMIT_SIMULATOR_FLAKY_ACCOUNTS": json.dumps({OUTAGE_ACCOUNT: 1000, FLAKY_ACCOUNT: 2}),
            "REMIT_SIMULATOR_TRANSIENT_RATE": str(c.transient_rate),
            "REMIT_RETRY_DELAYS_SECONDS": "[0.2, 0.5, 1.0]",
            "REMIT_RELAY_BATCH_SIZE": "100",
            "REMIT_LOG_LEVEL": "WARNING",
        }

    # ---------------------------------------------------------------- processes

    def _start(self, slot: Slot, **fault_env: str) -> None:
        env = self.env.env(**fault_env)
        log_path = self.config.logs / f"{slot.name}.log"
        with log_path.open("a") as f:
            f.write(f"\n===== start #{slot.starts + 1} {datetime.now(UTC):%H:%M:%S} {fault_env or ''}\n")
        if slot.role == "consumer":
            slot.proc = ServiceProcess.consumer(env, log_path, port=free_port())
        elif slot.role == "relay":
            slot.proc = ServiceProcess.relay(env, log_path)
        else:
            args = [sys.executable, "-m", "faststream", "run", "app.deadletters.main:app"]
            slot.proc = ServiceProcess(args, env, log_path)
        slot.armed = SELF_KILLS[slot.role] if fault_env else None
        slot.expected_death = False
        slot.starts += 1
        slot.started_at = time.monotonic()

    def _stop_slot(self, slot: Slot) -> None:
        if slot.proc is None:
            return
        if slot.paused:
            with contextlib.suppress(ProcessLookupError):
                slot.proc.proc.send_signal(signal.SIGCONT)
            slot.paused = False
        slot.expected_death = True
        slot.proc.stop(timeout=15)

    def _kill(self, slot: Slot) -> None:
        assert slot.proc is not None
        slot.expected_death = True
        if slot.paused:
            slot.proc.proc.send_signal(signal.SIGCONT)
            slot.paused = False
        slot.proc.kill()

    async def _supervise(self) -> None:
        """Restart whatever died; a death nobody planned is recorded (and its log tail kept)."""
        while not self._stop.is_set():
            for slot in self.slots:
                proc = slot.proc
                if proc is None or proc.proc.poll() is None:
                    continue
                code = proc.proc.returncode
                if slot.expected_death:
                    pass
                elif slot.armed and code == -signal.SIGKILL:
                    self.faults[slot.armed] += 1
                    self.log(f"{slot.name} killed itself at the injected point ({slot.armed})")
                elif self._started_while_broker_down(slot):
                    self.startup_exits += 1
                    self.log(f"{slot.name} exited with {code}: it started while the broker was down")
                else:
                    tail = proc.log()[-1500:]
                    self.unexpected.append(f"{slot.name} exited with {code}: ...{tail}")
                    self.log(f"UNEXPECTED: {slot.name} exited with code {code}; restarting")
                with contextlib.suppress(Exception):
                    proc.kill()
                await asyncio.sleep(self.rng.uniform(0.1, 0.8))
                self._start(slot)
            await asyncio.sleep(0.2)

    def _started_while_broker_down(self, slot: Slot) -> bool:
        # Up to 5 s before the stop: still connecting when the broker went away.
        now = time.monotonic()
        return any(stop - 5.0 <= slot.started_at <= (back or now) for stop, back in self._broker_down)

    def _pick(self, role: str) -> Slot:
        """A live, running process of the role; one armed to kill itself only if there is no other."""
        alive = [s for s in self.slots if s.role == role and s.proc and s.proc.proc.poll() is None]
        running = [s for s in alive if not s.paused]
        candidates = [s for s in running if not s.armed] or running or alive
        return self.rng.choice(candidates or [s for s in self.slots if s.role == role])

    # ---------------------------------------------------------------- faults

    def _plan(self) -> list[tuple[float, str]]:
        c = self.config
        kinds = [kind for kind, n in c.faults.items() for _ in range(n)]
        self.rng.shuffle(kinds)
        times = sorted(self.rng.uniform(1.0, c.fault_window) for _ in kinds)
        return list(zip(times, kinds, strict=True))

    async def _inject(self, plan: list[tuple[float, str]]) -> None:
        start = time.monotonic()
        pauses: list[asyncio.Task[None]] = []
        for at, kind in plan:
            await asyncio.sleep(max(0.0, start + at - time.monotonic()))
            if kind == "consumer_pause":  # runs alongside the next faults
                pauses.append(asyncio.create_task(self._pause(self._pick("consumer"))))
                continue
            try:
                await self._fault(kind)
            except Exception as exc:  # a fault that could not be injected is reported, not fatal
                self.log(f"fault {kind} could not be injected: {exc!r}")
        await asyncio.gather(*pauses)

    async def _fault(self, kind: str) -> None:
        rng = self.rng
        if kind == "consumer_kill":
            slot = self._pick("consumer")
            self._kill(slot)
            self.faults[kind] += 1
            self.log(f"SIGKILL {slot.name}")
        elif kind == "relay_kill":
            slot = self._pick("relay")
            self._kill(slot)
            self.faults[kind] += 1
            self.log("SIGKILL relay")
        elif kind == "consumer_kill_at_commit":
            slot = self._pick("consumer")
            self._kill(slot)
            n = rng.randint(1, 8)
            self._start(slot, REMIT_FAULT_KILL_AFTER_COMMITS=str(n))
            self.armed[kind] += 1
            self.log(f"{slot.name} restarted to SIGKILL itself after commit #{n}, before its acks")
        elif kind == "relay_kill_at_publish":
            slot = self._pick("relay")
            self._kill(slot)
            n = rng.randint(1, 3)
            self._start(slot, REMIT_FAULT_KILL_AFTER_PUBLISHES=str(n))
            self.armed[kind] += 1
            self.log(f"relay restarted to SIGKILL itself after confirmed batch #{n}, before marking it")
        elif kind == "pg_terminate":
            n = await self._terminate_backends()
            self.faults[kind] += 1
            self.log(f"terminated {n} PostgreSQL connections")
        elif kind == "amqp_close":
            n = await asyncio.to_thread(self._close_vhost_connections)
            self.faults[kind] += 1
            self.log(f"force-closed {n} AMQP connections of the vhost")
        elif kind == "broker_restart":
            await self._restart_broker()
            self.faults[kind] += 1
        else:
            raise ValueError(f"unknown fault {kind!r}")

    async def _pause(self, slot: Slot) -> None:
        proc = slot.proc
        if proc is None or proc.proc.poll() is not None or slot.paused:
            return
        seconds = self.rng.uniform(*self.config.pause_seconds)
        proc.proc.send_signal(signal.SIGSTOP)
        slot.paused = True
        self.faults["consumer_pause"] += 1
        self.log(f"SIGSTOP {slot.name} for {seconds:.1f}s")
        try:
            await asyncio.sleep(seconds)
        finally:
            if slot.proc is proc and slot.paused:
                with contextlib.suppress(ProcessLookupError):
                    proc.proc.send_signal(signal.SIGCONT)
                slot.paused = False

    async def _terminate_backends(self) -> int:
        name = self.database_url.rsplit("/", 1)[1]
        admin = await asyncpg.connect(PG_ADMIN_DSN, timeout=10)
        try:
            query = (
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = $1 AND pid <> pg_backend_pid()"
            )
            return int(await admin.fetchval(query, name))
        finally:
            await admin.close()

    def _close_vhost_connections(self) -> int:
        with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH, timeout=10) as client:
            response = client.get(f"/api/vhosts/{quote(self.vhost, safe='')}/connections")
            response.raise_for_status()
            names = [c["name"] for c in response.json()]
            for name in names:
                client.delete(f"/api/connections/{quote(name, safe='')}", headers={"X-Reason": "chaos rig"})
        return len(names)

    async def _restart_broker(self) -> None:
        down = self.rng.uniform(*self.config.broker_down_seconds)
        self.log(f"RabbitMQ stop_app (down for {down:.1f}s + restart)")
        self._broker_down.append((time.monotonic(), 0.0))
        try:
            await _run("rabbitmqctl", "stop_app")
            await asyncio.sleep(down)
            await _run("rabbitmqctl", "start_app")
            await _wait_for_broker(120)
        finally:
            self._broker_down[-1] = (self._broker_down[-1][0], time.monotonic())
        self.log("RabbitMQ is back (AMQP port and management API answer)")

    # ---------------------------------------------------------------- workload

    async def _submit_all(self, uow: UnitOfWorkFactory, settings: Settings) -> None:
        c = self.config
        total = c.batches + c.expired_batches
        order = ["expired"] * c.expired_batches + ["live"] * c.batches
        self.rng.shuffle(order)
        gap = c.fault_window * 0.85 / max(total, 1)
        for n, kind in enumerate(order):
            tenant = self.tenants[0] if kind == "expired" else self.rng.choice(self.tenants)
            path = self._write_batch(n, tenant)
            now = datetime.now(UTC) - timedelta(hours=1) if kind == "expired" else None
            await self._submit(SubmitBatch(tenant, path), uow, settings, now)
            await asyncio.sleep(gap)

    async def _submit(self, command: SubmitBatch, uow: UnitOfWorkFactory, settings: Settings, now: Any) -> None:
        """Submit, retrying through database faults. The outbox, not this, is the truth of what was accepted."""
        for attempt in range(20):
            try:
                await submit_batch(command, uow, settings, now=now)
                self.batches_submitted += 1
                return
            except BatchRefused as exc:
                if "already submitted" in str(exc):  # committed, but the answer was lost to a fault
                    self.batches_submitted += 1
                    return
                raise
            except Exception as exc:
                self.log(f"submit attempt {attempt + 1} failed ({type(exc).__name__}); retrying")
                await asyncio.sleep(0.5)
        raise RuntimeError(f"could not submit {command.path} through 20 attempts")

    def _write_batch(self, n: int, tenant: str) -> Path:
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

    # ---------------------------------------------------------------- observation

    async def _scrape_metrics(self) -> None:
        while not self._stop.is_set():
            await self._scrape_once()
            await asyncio.sleep(1.5)

    async def _scrape_once(self) -> None:
        async with httpx.AsyncClient(timeout=1.0) as client:
            for slot in self.slots:
                proc = slot.proc
                if slot.role != "consumer" or proc is None or proc.port is None or slot.paused:
                    continue
                with contextlib.suppress(httpx.HTTPError):
                    response = await client.get(f"http://127.0.0.1:{proc.port}/metrics")
                    self._metrics[proc.proc.pid] = _outcomes(response.text)

    async def progress(self) -> dict[str, int]:
        """Accepted, settled and unpublished so far (for a progress display)."""
        return await outbox_progress(self._engine) if self._engine is not None else {}

    async def _settle(self, timeout: float) -> bool:
        """Quiescence: everything published and terminal, every queue empty (ready and unacked), twice."""
        deadline = time.monotonic() + timeout
        calm = 0
        while time.monotonic() < deadline:
            state = await self.progress()
            queues = await asyncio.to_thread(self._queue_messages)
            quiet = (
                bool(state)
                and state["unpublished"] == 0
                and state["settled"] == state["accepted"]
                and queues == 0
                and not any(s.paused for s in self.slots)
            )
            calm = calm + 1 if quiet else 0
            if calm >= 3:  # the management API's counts lag by up to 5 s: stay quiet across that
                return True
            await asyncio.sleep(2.5)
        return False

    def _queue_messages(self) -> int | None:
        return vhost_messages(self.vhost)


_PROGRESS = text(
    "SELECT count(*) AS accepted, count(*) FILTER (WHERE published_at IS NULL) AS unpublished, "
    "count(*) FILTER (WHERE EXISTS (SELECT 1 FROM ledger l WHERE l.message_id = o.message_id) "
    "OR EXISTS (SELECT 1 FROM dead_letters d WHERE d.message_id = o.message_id "
    "AND d.status IN ('open', 'discarded'))) AS settled FROM outbox o"
)


async def outbox_progress(engine: AsyncEngine) -> dict[str, int]:
    """Accepted, unpublished and settled (paid or dead-lettered) messages; {} when the database is away."""
    try:
        async with engine.connect() as conn:
            row = (await conn.execute(_PROGRESS)).mappings().one()
    except Exception:
        return {}
    return {k: int(v) for k, v in row.items()}


def vhost_messages(vhost: str) -> int | None:
    """Messages in every queue of the vhost, ready and unacked (management API: lags by up to 5 s)."""
    try:
        with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH, timeout=5) as client:
            response = client.get(f"/api/queues/{quote(vhost, safe='')}", params={"columns": "name,messages"})
            response.raise_for_status()
            return sum(int(q.get("messages") or 0) for q in response.json())
    except httpx.HTTPError:
        return None


def _outcomes(metrics: str) -> tuple[int, int]:
    duplicates = retries = 0
    for line in metrics.splitlines():
        if not line.startswith("remit_outcomes_total{"):
            continue
        value = int(float(line.rsplit(" ", 1)[1]))
        if 'outcome="duplicate"' in line:
            duplicates += value
        elif 'outcome="retrying"' in line:
            retries += value
    return duplicates, retries


async def _run(*args: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _, err = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}): {err.decode(errors='replace')[-500:]}")


async def _wait_for_broker(timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _port_open(5672):
            try:
                async with httpx.AsyncClient(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH, timeout=3) as client:
                    if (await client.get("/api/overview")).status_code == 200:
                        return
            except httpx.HTTPError:
                pass
        await asyncio.sleep(0.5)
    raise RuntimeError(f"RabbitMQ did not come back within {timeout}s")


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def short_faults() -> dict[str, int]:
    """The short run's plan: a few of each kind the test suite may inject (no broker restart)."""
    return {
        "consumer_kill": 6,
        "consumer_kill_at_commit": 3,
        "relay_kill": 2,
        "relay_kill_at_publish": 2,
        "consumer_pause": 2,
        "pg_terminate": 2,
        "amqp_close": 2,
    }


def new_seed() -> int:
    return secrets.randbelow(2**31)

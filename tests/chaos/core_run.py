"""One chaos run of remit against the reference core (issue 14, item 5): both as real processes with their own
databases, payments published at a steady pace while a fault plan (tests/chaos/core_plan.py) runs, then the
end checks. The short test (tests/chaos/test_core_chaos_short.py) and the long run (bench/chaos_core_long.py)
are this with different plans and sizes.

End checks (each failure is a violation, not an exception, so a long run reports them all):
- the core's journal: every booked key is one transfer of one debit and one credit, for every currency
  debits = credits, every balance = opening + credits - debits (tests/utils/corebank.py `check_ledger`);
- exactly one transfer per payment and no refusal (every payment is between funded, open accounts);
- remit's records (the core's transfer id beside each idempotency record, one ledger row each) equal the
  core's journal key for key;
- nothing stuck: nothing dead-lettered and every queue of the vhost empty.
"""

import asyncio
import contextlib
import random
import signal
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aio_pika
import httpx

from app.messaging import headers
from app.messaging.connection import publisher_channel
from app.messaging.properties import CONTENT_TYPE
from app.messaging.topology import Topology, declare_topology
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.chaos.checks import vhost_messages
from tests.chaos.core_plan import CorePlan, Event
from tests.chaos.faults import _run, close_vhost_connections, stop_start_broker, terminate_backends
from tests.utils.core_world import core_keys, dead_letters_left, remit_records, wire_for
from tests.utils.corebank import Acct, CoreBank, check_ledger, open_account, start_corebank
from tests.utils.corebank import wait_ready as core_ready
from tests.utils.factories import to_wire_bytes
from tests.utils.services import ServiceEnv, ServiceProcess, app_database_url
from tests.utils.world import Routing, fresh_tenant

Log = Callable[[str], None]
CURRENCIES = ("AUD", "NZD")


@dataclass
class CoreChaosConfig:
    seed: int
    plan: CorePlan
    logs: Path
    payments: int = 600
    tenants: int = 3
    consumers: int = 2
    publish_seconds: float = 40.0
    accounts_per_side: int = 6  # per currency: funded debtors and empty creditors
    recover_timeout: float = 180.0  # after the plan: every payment recorded and every queue empty
    plan_window: float = 70.0  # for the report: the seconds the plan's faults were drawn in


@dataclass
class CoreChaosResult:
    seed: int
    plan: CorePlan
    payments: int
    injected: Counter[str]
    consumers: Counter[str]  # starts (plain, armed) and deaths (killed, died_at_core, exited)
    cut: Counter[str]  # connections ended by pg_terminate / amqp_close
    republished: int  # publishes retried after a broker fault (the same message id: a duplicate at most)
    core_booked: int
    core_rejected: int
    remit_records: int
    dead_letters: int
    violations: list[str]
    recovered_in: float | None
    elapsed: float
    exits: list[str] = field(default_factory=list)  # consumer exits nobody planned (log tails)

    @property
    def ok(self) -> bool:
        return not self.violations and self.recovered_in is not None

    def summary_rows(self) -> list[tuple[str, str]]:
        rows = [("seed", str(self.seed)), ("payments", str(self.payments))]
        at_core = f"{self.consumers['died_at_core']} (armed {self.consumers['armed']})"
        rows.append(("fault: consumer_kill_at_core", at_core))
        rows += [(f"fault: {kind}", str(n)) for kind, n in sorted(self.injected.items())]
        rows += [
            ("faults total", str(self.consumers["died_at_core"] + sum(self.injected.values()))),
            ("remit's PostgreSQL connections terminated", str(self.cut["PostgreSQL"])),
            ("remit's AMQP connections force-closed", str(self.cut["AMQP"])),
            ("consumer starts", str(self.consumers["plain"] + self.consumers["armed"])),
            ("consumer exits nobody planned", str(self.consumers["exited"])),
            ("publishes retried", str(self.republished)),
            ("transfers in the core (booked keys)", str(self.core_booked)),
            ("refusals in the core", str(self.core_rejected)),
            ("remit's records", str(self.remit_records)),
            ("dead letters", str(self.dead_letters)),
            ("violations", str(len(self.violations))),
            ("recovered after the plan (s)", f"{self.recovered_in:.1f}" if self.recovered_in is not None else "no"),
            ("elapsed (s)", f"{self.elapsed:.1f}"),
        ]
        return rows

    def summary(self) -> str:
        rows = self.summary_rows()
        width = max(len(k) for k, _ in rows)
        return "\n".join([f"{k.ljust(width)}  {v}" for k, v in rows] + [f"  VIOLATION: {v}" for v in self.violations])


@dataclass
class Consumers:
    """The consumer processes, each restarted by a supervisor when it dies; the plan's armed starts first."""

    env: dict[str, str]
    logs: Path
    arms: list[int]
    count: int
    log: Log
    slots: list[tuple[ServiceProcess, int | None]] = field(default_factory=list)
    killed: set[int] = field(default_factory=set)  # pids this run SIGKILLed on purpose
    counts: Counter[str] = field(default_factory=Counter)
    exits: list[str] = field(default_factory=list)

    def start(self, index: int) -> tuple[ServiceProcess, int | None]:
        armed = self.arms.pop(0) if self.arms else None
        self.counts["armed" if armed else "plain"] += 1
        log = self.logs / f"consumer-{index}-{self.counts['armed'] + self.counts['plain']}.log"
        return ServiceProcess.consumer(self.env, log, kill_after_core=armed), armed

    async def supervise(self) -> None:
        self.slots = [self.start(i) for i in range(self.count)]
        while True:
            await asyncio.sleep(0.2)
            for i, (process, armed) in enumerate(self.slots):
                if process.proc.poll() is None:
                    continue
                self._account_for(process, armed)
                process.stop()
                self.slots[i] = self.start(i)

    def _account_for(self, process: ServiceProcess, armed: int | None) -> None:
        code = process.proc.returncode
        if process.proc.pid in self.killed:
            self.counts["killed"] += 1
        elif armed and code == -signal.SIGKILL:
            self.counts["died_at_core"] += 1
            self.log(f"a consumer SIGKILLed itself after the core's answer #{armed}, before remit's commit")
        else:  # e.g. started while the broker was down: it exits, the supervisor starts another
            self.counts["exited"] += 1
            self.exits.append(f"exit {code}: ...{process.log()[-800:]}")
            self.log(f"a consumer exited with {code}; restarting")

    def kill_one(self, rng: random.Random) -> None:
        """SIGKILL a running consumer, one not armed if there is one (an armed one is about to kill itself)."""
        running = [(p, armed) for p, armed in self.slots if p.proc.poll() is None]
        running = [(p, a) for p, a in running if a is None] or running
        if running:
            victim, _ = rng.choice(running)
            self.killed.add(victim.proc.pid)
            victim.proc.send_signal(signal.SIGKILL)

    def stop(self) -> None:
        for process, _ in self.slots:
            process.stop()


class CoreChaos:
    """The run: the core, the consumers, the publisher and the plan's faults; then the checks."""

    def __init__(
        self, config: CoreChaosConfig, env: ServiceEnv, uow: UnitOfWorkFactory, core_database_url: str, log: Log = print
    ) -> None:
        self.config = config
        self.env = env
        self.uow = uow
        self.core_database_url = core_database_url
        self.log = log
        self.rng = random.Random(config.seed)
        self.settings = Settings(
            database_url=app_database_url(env.database_url),
            migration_database_url=env.database_url,
            amqp_url=env.amqp_url,
        )
        self.database = env.database_url.rsplit("/", 1)[1]
        self.injected: Counter[str] = Counter()
        self.cut: Counter[str] = Counter()  # connections the pg_terminate and amqp_close faults ended
        self._locks = {kind: asyncio.Lock() for kind in ("core_down", "broker_restart", "pg_restart")}
        self.republished = 0
        self.core: CoreBank | None = None
        self.consumers: Consumers | None = None
        self.tenants: list[str] = []

    async def run(self) -> CoreChaosResult:
        c = self.config
        started = time.monotonic()
        self.log(f"REMIT_CHAOS_SEED={c.seed}\nplan: {c.plan}")
        self.core = start_corebank(self.core_database_url, c.logs / "core-1.log")
        supervisor: asyncio.Task[None] | None = None
        recovered_in = None
        try:
            await core_ready(self.core)
            wires = await self._workload()
            self.consumers = Consumers(self._consumer_env(), c.logs, list(c.plan.kills_at_core), c.consumers, self.log)
            supervisor = asyncio.create_task(self.consumers.supervise())
            await asyncio.gather(self._publish(wires), self._inject(c.plan.events))
            plan_done = time.monotonic()
            if await self._recovered():
                recovered_in = time.monotonic() - plan_done
            await asyncio.sleep(2)  # anything still in flight would show up as a second record or transfer
        finally:
            if supervisor is not None:
                supervisor.cancel()
                await asyncio.gather(supervisor, return_exceptions=True)
            if self.consumers is not None:
                self.consumers.stop()
            self.core.process.stop()
        return await self._check(wires, recovered_in, time.monotonic() - started)

    def _consumer_env(self) -> dict[str, str]:
        assert self.core is not None
        return self.env.env(
            **self.core.remit_env(),
            REMIT_CORE_BANKING_CONNECT_TIMEOUT_SECONDS="1",
            REMIT_CORE_BANKING_READ_TIMEOUT_SECONDS="3",
            REMIT_CORE_BANKING_BREAKER_THRESHOLD="3",
            REMIT_CORE_BANKING_PROBE_INTERVAL_SECONDS="0.5",
            REMIT_MAX_RETRIES="5",
        )

    async def _workload(self) -> list[dict[str, Any]]:
        """Accounts in the core, tenants in remit (routed on the vhost), and the payments between them."""
        c = self.config
        assert self.core is not None
        held: dict[str, tuple[list[Acct], list[Acct]]] = {}
        async with self.core.client(timeout=30) as client:
            for currency in CURRENCIES:
                debtors = [await open_account(client, 10**13, currency) for _ in range(c.accounts_per_side)]
                creditors = [await open_account(client, 0, currency) for _ in range(c.accounts_per_side)]
                held[currency] = (debtors, creditors)
        connection = await aio_pika.connect_robust(self.settings.amqp_url)
        try:
            await declare_topology(await publisher_channel(connection), Topology.from_settings(self.settings))
        finally:
            await connection.close()
        routing, Routing.amqp_url = Routing.amqp_url, self.settings.amqp_url
        try:
            self.tenants = [await fresh_tenant(self.uow) for _ in range(c.tenants)]
        finally:
            Routing.amqp_url = routing
        wires = []
        for _ in range(c.payments):
            debtors, creditors = held[self.rng.choice(CURRENCIES)]
            debtor, creditor = self.rng.choice(debtors), self.rng.choice(creditors)
            wires.append(wire_for(self.rng.choice(self.tenants), debtor, creditor, self.rng.randint(1, 10**6)))
        return wires

    async def _publish(self, wires: list[dict[str, Any]]) -> None:
        """Publish at a steady pace as the trusted service login would; a publish that a broker fault
        interrupted is retried with the same message id (remit's idempotency absorbs a second copy)."""
        start, gap = time.monotonic(), self.config.publish_seconds / len(wires)
        connection: aio_pika.abc.AbstractConnection | None = None
        exchange: aio_pika.abc.AbstractExchange | None = None
        try:
            for n, wire in enumerate(wires):
                await asyncio.sleep(max(0.0, start + n * gap - time.monotonic()))
                message = aio_pika.Message(
                    to_wire_bytes(wire),
                    content_type=CONTENT_TYPE,
                    delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                    message_id=wire["message_id"],
                    headers={headers.TENANT: wire["tenant_id"]},
                    user_id="guest",
                )
                for _ in range(600):
                    try:
                        if connection is None or exchange is None:
                            connection = await aio_pika.connect(self.settings.amqp_url, timeout=5)
                            channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
                            exchange = await channel.get_exchange(self.settings.exchange)
                        await exchange.publish(message, routing_key=f"{wire['tenant_id']}.payment", timeout=10)
                        break
                    except Exception:
                        self.republished += 1
                        if connection is not None:
                            with contextlib.suppress(Exception):
                                await connection.close()
                        connection = exchange = None
                        await asyncio.sleep(0.5)
                else:
                    raise RuntimeError(f"could not publish {wire['message_id']} through 600 attempts")
        finally:
            if connection is not None:
                with contextlib.suppress(Exception):
                    await connection.close()

    async def _inject(self, events: tuple[Event, ...]) -> None:
        start = time.monotonic()
        running: list[asyncio.Task[None]] = []
        for event in events:
            await asyncio.sleep(max(0.0, start + event.at - time.monotonic()))
            running.append(asyncio.create_task(self._fault(event)))  # outages run alongside the next faults
        await asyncio.gather(*running)

    async def _fault(self, event: Event) -> None:
        lock = self._locks.get(event.kind)  # an outage drawn inside another of its kind follows it
        try:
            if lock is None:
                await self._inject_one(event)
            else:
                async with lock:
                    await self._inject_one(event)
            self.injected[event.kind] += 1
        except Exception as exc:  # a fault that could not be injected is reported, not fatal
            self.log(f"fault {event} could not be injected: {exc!r}")

    async def _inject_one(self, event: Event) -> None:
        assert self.core is not None
        assert self.consumers is not None
        kind = event.kind
        self.log(f"fault: {event}")
        if kind == "drop_answers":
            await self._core_faults(drop_rate=event.rate, seed=self.config.seed)
            await asyncio.sleep(event.seconds)
            with contextlib.suppress(httpx.HTTPError):  # the core may be down by now (its faults went with it)
                await self._core_faults()
        elif kind == "core_down":
            port = self.core.process.port
            self.core.process.kill()
            await asyncio.sleep(event.seconds)
            self.core = start_corebank(self.core_database_url, self.config.logs / f"core-{event.at:.0f}.log", port=port)
            await core_ready(self.core, timeout=120)
        elif kind == "consumer_kill":
            self.consumers.kill_one(self.rng)
        elif kind == "kill_at_core":  # its replacement starts armed
            self.consumers.arms.append(event.n)
            self.consumers.kill_one(self.rng)
        elif kind == "pg_terminate":
            terminated = await terminate_backends(self.database)
            self.cut["PostgreSQL"] += terminated
            self.log(f"terminated {terminated} connections to remit's database")
        elif kind == "amqp_close":
            closed = await asyncio.to_thread(close_vhost_connections, self.env.vhost)
            self.cut["AMQP"] += closed
            self.log(f"force-closed {closed} AMQP connections of remit's vhost")
        elif kind == "broker_restart":
            await stop_start_broker(event.seconds)
        elif kind == "pg_restart":
            await restart_postgres()
        else:
            raise ValueError(f"unknown fault {kind!r}")

    async def _core_faults(self, **plan: Any) -> None:
        assert self.core is not None
        await self.core.set_faults(**plan)

    async def _recovered(self) -> bool:
        """Every payment recorded by remit and every queue of the vhost empty, three polls in a row."""
        deadline = time.monotonic() + self.config.recover_timeout
        calm = 0
        while time.monotonic() < deadline:
            try:
                done = await self._records_count() >= self.config.payments
            except Exception:  # remit's database may still be coming back
                done = False
            queues = await asyncio.to_thread(vhost_messages, self.env.vhost)
            calm = calm + 1 if done and queues == 0 else 0
            if calm >= 3:  # the management API's counts lag by up to 5 s
                return True
            await asyncio.sleep(2.0)
        return False

    async def _records_count(self) -> int:
        return sum([len(await remit_records(self.uow, t)) for t in self.tenants])

    async def _check(self, wires: list[dict[str, Any]], recovered_in: float | None, elapsed: float) -> CoreChaosResult:
        c = self.config
        violations: list[str] = []
        booked = rejected = 0
        try:
            ledger = await check_ledger(self.core_database_url)
            booked, rejected = ledger.booked_keys, ledger.rejected_keys
        except AssertionError as exc:
            violations.append(f"the core's ledger: {exc}")
        if booked != c.payments:
            violations.append(f"{booked} transfers in the core for {c.payments} payments")
        if rejected:
            violations.append(f"{rejected} refusals in the core (every payment was bookable)")
        keys = await core_keys(self.core_database_url)
        rows = [(t, r) for t in self.tenants for r in await remit_records(self.uow, t)]
        mine = {f"{t}:{r.message_id}": ("booked", r.core_transfer_id) for t, r in rows}
        if mine != keys:
            differ = sorted(set(mine.items()) ^ set(keys.items()))[:5]
            violations.append(f"remit's records differ from the core's journal, e.g. {differ}")
        if {f"{w['tenant_id']}:{w['message_id']}" for w in wires} != set(keys):
            violations.append("the core's keys are not exactly the payments' (tenant_id, message_id)")
        missing = [r.message_id for _, r in rows if not r.in_ledger]
        if missing:
            violations.append(f"{len(missing)} records without their row in remit's ledger, e.g. {missing[:3]}")
        dead = await self._dead_letters()
        if dead:
            violations.append(f"{dead} dead letters")
        left = await asyncio.to_thread(vhost_messages, self.env.vhost)
        if left:
            violations.append(f"{left} messages left in the vhost's queues")
        assert self.consumers is not None
        return CoreChaosResult(
            seed=c.seed,
            plan=c.plan,
            payments=c.payments,
            injected=self.injected,
            consumers=self.consumers.counts,
            cut=self.cut,
            republished=self.republished,
            core_booked=booked,
            core_rejected=rejected,
            remit_records=len(rows),
            dead_letters=dead,
            violations=violations,
            recovered_in=recovered_in,
            elapsed=elapsed,
            exits=self.consumers.exits,
        )

    async def _dead_letters(self) -> int:
        connection = await aio_pika.connect(self.settings.amqp_url)
        try:
            return await dead_letters_left(await connection.channel(), self.settings)
        finally:
            await connection.close()


async def restart_postgres() -> None:
    """pg_ctlcluster restart of the local cluster (every database on the server: long run only)."""
    proc = await asyncio.create_subprocess_exec("pg_lsclusters", "--no-header", stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    version, cluster = out.decode().split()[:2]
    await _run("pg_ctlcluster", version, cluster, "restart")

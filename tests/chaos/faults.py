"""The chaos run's faults: a plan drawn from the seed, injected on time while the workload runs.

consumer_kill             SIGKILL a consumer (the supervisor restarts it)
consumer_kill_at_commit   restart a consumer armed to SIGKILL itself after its n-th commit, before the acks
                          (the most dangerous point)
relay_kill                SIGKILL the outbox relay
relay_kill_at_publish     restart the relay armed to SIGKILL itself after the broker confirmed its n-th
                          batch, before marking it published
consumer_pause            SIGSTOP a consumer for a few seconds, then SIGCONT
pg_terminate              pg_terminate_backend() every connection to the test database
amqp_close                force-close every connection of the test vhost (management API)
broker_restart            rabbitmqctl stop_app / start_app: disrupts the whole broker (long run only)

The connection-level faults and the broker restart are plain functions too (`terminate_backends`,
`close_vhost_connections`, `stop_start_broker`): the chaos run against the external core
(tests/chaos/core_run.py) injects them on its own schedule.
"""

import asyncio
import contextlib
import random
import signal
import socket
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote

import asyncpg
import httpx

from tests.chaos.config import ChaosConfig
from tests.chaos.processes import Processes, Slot
from tests.utils.services import MANAGEMENT_AUTH, MANAGEMENT_URL, PG_ADMIN_DSN

Log = Callable[[str], None]


@dataclass
class Faults:
    """Injects the plan into the run's processes, database and vhost; counts what it injected and armed."""

    config: ChaosConfig
    processes: Processes
    database: str
    vhost: str
    rng: random.Random
    log: Log
    injected: Counter[str] = field(default_factory=Counter)
    armed: Counter[str] = field(default_factory=Counter)  # self-kills armed (they count when they fire)

    def plan(self) -> list[tuple[float, str]]:
        c = self.config
        kinds = [kind for kind, n in c.faults.items() for _ in range(n)]
        self.rng.shuffle(kinds)
        times = sorted(self.rng.uniform(1.0, c.fault_window) for _ in kinds)
        return list(zip(times, kinds, strict=True))

    async def inject(self, plan: list[tuple[float, str]]) -> None:
        start = time.monotonic()
        pauses: list[asyncio.Task[None]] = []
        for at, kind in plan:
            await asyncio.sleep(max(0.0, start + at - time.monotonic()))
            if kind == "consumer_pause":  # runs alongside the next faults
                pauses.append(asyncio.create_task(self._pause(self.processes.pick("consumer"))))
                continue
            try:
                await self._fault(kind)
            except Exception as exc:  # a fault that could not be injected is reported, not fatal
                self.log(f"fault {kind} could not be injected: {exc!r}")
        await asyncio.gather(*pauses)

    async def _fault(self, kind: str) -> None:
        if kind in ("consumer_kill", "relay_kill"):
            slot = self.processes.pick(kind.removesuffix("_kill"))
            self.processes.kill(slot)
            self.injected[kind] += 1
            self.log(f"SIGKILL {slot.name}")
        elif kind == "consumer_kill_at_commit":
            slot, n = self._arm(kind, "consumer", most=8)
            self.log(f"{slot.name} restarted to SIGKILL itself after commit #{n}, before its acks")
        elif kind == "relay_kill_at_publish":
            _, n = self._arm(kind, "relay", most=3)
            self.log(f"relay restarted to SIGKILL itself after confirmed batch #{n}, before marking it")
        elif kind == "pg_terminate":
            n = await self._terminate_backends()
            self.injected[kind] += 1
            self.log(f"terminated {n} PostgreSQL connections")
        elif kind == "amqp_close":
            n = await asyncio.to_thread(self._close_vhost_connections)
            self.injected[kind] += 1
            self.log(f"force-closed {n} AMQP connections of the vhost")
        elif kind == "broker_restart":
            await self._restart_broker()
            self.injected[kind] += 1
        else:
            raise ValueError(f"unknown fault {kind!r}")

    def _arm(self, kind: str, role: str, most: int) -> tuple[Slot, int]:
        """Restart a process of the role armed to SIGKILL itself at its n-th commit or confirmed batch."""
        slot = self.processes.pick(role)
        self.processes.kill(slot)
        n = self.rng.randint(1, most)
        self.processes.start(slot, kill_after=n, armed=kind)
        self.armed[kind] += 1
        return slot, n

    async def _pause(self, slot: Slot) -> None:
        proc = slot.proc
        if proc is None or proc.proc.poll() is not None or slot.paused:
            return
        seconds = self.rng.uniform(*self.config.pause_seconds)
        proc.proc.send_signal(signal.SIGSTOP)
        slot.paused = True
        self.injected["consumer_pause"] += 1
        self.log(f"SIGSTOP {slot.name} for {seconds:.1f}s")
        try:
            await asyncio.sleep(seconds)
        finally:
            if slot.proc is proc and slot.paused:
                with contextlib.suppress(ProcessLookupError):
                    proc.proc.send_signal(signal.SIGCONT)
                slot.paused = False

    async def _terminate_backends(self) -> int:
        return await terminate_backends(self.database)

    def _close_vhost_connections(self) -> int:
        return close_vhost_connections(self.vhost)

    async def _restart_broker(self) -> None:
        down = self.rng.uniform(*self.config.broker_down_seconds)
        self.log(f"RabbitMQ stop_app (down for {down:.1f}s + restart)")
        self.processes.broker_stopped()
        try:
            await stop_start_broker(down)
        finally:
            self.processes.broker_back()
        self.log("RabbitMQ is back (AMQP port and management API answer)")


async def terminate_backends(database: str) -> int:
    """pg_terminate_backend() every connection to `database` (only that one: the server stays up)."""
    admin = await asyncpg.connect(PG_ADMIN_DSN, timeout=10)
    try:
        query = (
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = $1 AND pid <> pg_backend_pid()"
        )
        return int(await admin.fetchval(query, database))
    finally:
        await admin.close()


def close_vhost_connections(vhost: str, listed_within: float = 15.0) -> int:
    """Force-close every AMQP connection of `vhost` through the management API (the broker stays up).

    The management API lists a connection only after its first statistics event (seconds after it opened, more
    on a loaded machine): right after a restart the list can be empty although remit is connected, so it is
    read again until it names one, for up to `listed_within` seconds."""
    deadline = time.monotonic() + listed_within
    with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH, timeout=10) as client:
        while True:
            response = client.get(f"/api/vhosts/{quote(vhost, safe='')}/connections")
            response.raise_for_status()
            names = [c["name"] for c in response.json()]
            if names or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        for name in names:
            client.delete(f"/api/connections/{quote(name, safe='')}", headers={"X-Reason": "chaos rig"})
    return len(names)


async def stop_start_broker(down: float) -> None:
    """rabbitmqctl stop_app, `down` seconds, start_app, until AMQP and the management API answer (every vhost
    of the broker is disrupted)."""
    await _run("rabbitmqctl", "stop_app")
    await asyncio.sleep(down)
    await _run("rabbitmqctl", "start_app")
    await _wait_for_broker(120)


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

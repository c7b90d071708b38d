"""The chaos run's processes: consumers, the relay and the archiver, each in a slot a supervisor refills.

A death is one of three things: planned (a fault killed it), a self-kill at an armed point (the fault it
carries fired), or unexpected (recorded with its log tail). A process started while the broker was down
may exit instead of waiting; that is counted apart.
"""

import asyncio
import contextlib
import random
import signal
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime

from tests.chaos.config import ChaosConfig
from tests.utils.dead_letters import start_archiver
from tests.utils.services import ServiceEnv, ServiceProcess, free_port

Log = Callable[[str], None]


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

    def alive(self) -> bool:
        return self.proc is not None and self.proc.proc.poll() is None


class Processes:
    """Every slot of the run, started, killed, paused and restarted."""

    def __init__(self, config: ChaosConfig, env: ServiceEnv, rng: random.Random, log: Log) -> None:
        self.config = config
        self.env = env
        self.rng = rng
        self.log = log
        self.slots = [Slot(f"consumer{i}", "consumer") for i in range(config.consumers)]
        self.slots += [Slot("relay", "relay"), Slot("archiver", "archiver")]
        self.self_kills: Counter[str] = Counter()  # armed self-kills that fired, by fault kind
        self.unexpected: list[str] = []
        self.startup_exits = 0  # processes started while the broker was down, which exit instead of waiting
        self._broker_down: list[tuple[float, float]] = []  # (stopped, back) of each broker restart

    def start_all(self) -> None:
        for slot in self.slots:
            self.start(slot)

    def stop_all(self) -> None:
        for slot in self.slots:
            self._stop(slot)

    def start(self, slot: Slot, kill_after: int | None = None, armed: str | None = None) -> None:
        """Start the slot's process; `kill_after` arms its self-kill (commits for a consumer, confirmed batches
        for the relay), through the test-only entry point, and `armed` names the fault it counts as."""
        env = self.env.env()
        log_path = self.config.logs / f"{slot.name}.log"
        note = f"kill after {kill_after}" if kill_after else ""
        with log_path.open("a") as f:
            f.write(f"\n===== start #{slot.starts + 1} {datetime.now(UTC):%H:%M:%S} {note}\n")
        if slot.role == "consumer":
            slot.proc = ServiceProcess.consumer(env, log_path, port=free_port(), kill_after_commits=kill_after)
        elif slot.role == "relay":
            slot.proc = ServiceProcess.relay(env, log_path, kill_after_publishes=kill_after)
        else:
            slot.proc = start_archiver(env, log_path)
        slot.armed = armed if kill_after else None
        slot.expected_death = False
        slot.starts += 1
        slot.started_at = time.monotonic()

    def _stop(self, slot: Slot) -> None:
        if slot.proc is None:
            return
        if slot.paused:
            with contextlib.suppress(ProcessLookupError):
                slot.proc.proc.send_signal(signal.SIGCONT)
            slot.paused = False
        slot.expected_death = True
        slot.proc.stop(timeout=15)

    def kill(self, slot: Slot) -> None:
        assert slot.proc is not None
        slot.expected_death = True
        if slot.paused:
            slot.proc.proc.send_signal(signal.SIGCONT)
            slot.paused = False
        slot.proc.kill()

    def any_paused(self) -> bool:
        return any(s.paused for s in self.slots)

    def pick(self, role: str) -> Slot:
        """A live, running process of the role; one armed to kill itself only if there is no other."""
        alive = [s for s in self.slots if s.role == role and s.alive()]
        running = [s for s in alive if not s.paused]
        candidates = [s for s in running if not s.armed] or running or alive
        return self.rng.choice(candidates or [s for s in self.slots if s.role == role])

    def broker_stopped(self) -> None:
        self._broker_down.append((time.monotonic(), 0.0))

    def broker_back(self) -> None:
        self._broker_down[-1] = (self._broker_down[-1][0], time.monotonic())

    async def supervise(self, stop: asyncio.Event) -> None:
        """Restart whatever died; a death nobody planned is recorded (and its log tail kept)."""
        while not stop.is_set():
            for slot in self.slots:
                proc = slot.proc
                if proc is None or proc.proc.poll() is None:
                    continue
                self._account_for_death(slot, proc)
                with contextlib.suppress(Exception):
                    proc.kill()
                await asyncio.sleep(self.rng.uniform(0.1, 0.8))
                self.start(slot)
            await asyncio.sleep(0.2)

    def _account_for_death(self, slot: Slot, proc: ServiceProcess) -> None:
        code = proc.proc.returncode
        if slot.expected_death:
            return
        if slot.armed and code == -signal.SIGKILL:
            self.self_kills[slot.armed] += 1
            self.log(f"{slot.name} killed itself at the injected point ({slot.armed})")
        elif self._started_while_broker_down(slot):
            self.startup_exits += 1
            self.log(f"{slot.name} exited with {code}: it started while the broker was down")
        else:
            tail = proc.log()[-1500:]
            self.unexpected.append(f"{slot.name} exited with {code}: ...{tail}")
            self.log(f"UNEXPECTED: {slot.name} exited with code {code}; restarting")

    def _started_while_broker_down(self, slot: Slot) -> bool:
        # Up to 5 s before the stop: still connecting when the broker went away.
        now = time.monotonic()
        return any(stop - 5.0 <= slot.started_at <= (back or now) for stop, back in self._broker_down)

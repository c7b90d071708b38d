"""Worker pool control and state: the desired state per tier (`worker_pools`) that every consumer process
applies, and the heartbeat each process writes per pool (`worker_heartbeats`). Shared infrastructure: the
system scope only."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

RUNNING = "running"
STOPPED = "stopped"


@dataclass(frozen=True, slots=True)
class Heartbeat:
    process_id: str
    pool: str
    tier: str
    queue: str
    workers: int
    running: int
    paused_by: str | None = None  # why the process paused every pool (its core-banking breaker is open)
    paused_since: datetime | None = None  # since when: the breaker's time of opening (the process's clock)


@dataclass(frozen=True, slots=True)
class PausedProcess:
    """A consumer process that paused every pool of its own, as its latest heartbeat says."""

    process_id: str
    paused_by: str
    paused_since: datetime | None  # None: a process from before 0022


@dataclass(frozen=True, slots=True)
class LivePool:
    """A pool as the processes that reported since a moment see it, added up."""

    pool: str
    tier: str
    queue: str
    processes: int
    workers: int
    running: int
    paused: int = 0  # processes whose pools are paused (their core-banking breaker is open)


class WorkerPools(Protocol):
    async def desired_states(self) -> dict[str, str]:
        """tier -> desired state; a tier nobody set is RUNNING."""
        ...

    async def set_desired_state(self, tiers: Sequence[str], state: str, actor: str) -> None: ...

    async def beat(self, heartbeats: Sequence[Heartbeat]) -> None:
        """Write (or refresh) one heartbeat per (process, pool), stamped with the transaction's time."""
        ...

    async def live(self, since: datetime) -> list[LivePool]:
        """Every pool with a heartbeat after `since`."""
        ...

    async def paused(self, since: datetime) -> list[PausedProcess]:
        """The processes whose latest heartbeat, after `since`, says their pools are paused; by process id."""
        ...

"""In-memory worker pool control and heartbeats (the system scope only, as in PostgreSQL)."""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from app.storage.ports.worker_pools import Heartbeat, LivePool, PausedProcess
from tests.fakes.database import FakeTransaction

POOLS = "worker_pools"
HEARTBEATS = "worker_heartbeats"


@dataclass(frozen=True, slots=True)
class DesiredState:
    tier: str
    state: str
    updated_by: str


@dataclass(frozen=True, slots=True)
class HeartbeatRow:
    heartbeat: Heartbeat
    at: datetime


class FakeWorkerPools:
    def __init__(self, tx: FakeTransaction) -> None:
        self._tx = tx

    async def desired_states(self) -> dict[str, str]:
        self._tx.require_system(POOLS)
        states: list[DesiredState] = self._tx.rows(POOLS)
        return {s.tier: s.state for s in states}

    async def set_desired_state(self, tiers: Sequence[str], state: str, actor: str) -> None:
        self._tx.require_system(POOLS)
        for tier in tiers:
            self._tx.put(POOLS, tier, DesiredState(tier, state, actor))

    async def beat(self, heartbeats: Sequence[Heartbeat]) -> None:
        self._tx.require_system(HEARTBEATS)
        for beat in heartbeats:
            self._tx.put(HEARTBEATS, (beat.process_id, beat.pool), HeartbeatRow(beat, self._tx.db.clock()))

    async def live(self, since: datetime) -> list[LivePool]:
        self._tx.require_system(HEARTBEATS)
        rows: list[HeartbeatRow] = self._tx.rows(HEARTBEATS)
        pools: dict[tuple[str, str, str], list[Heartbeat]] = defaultdict(list)
        for row in rows:
            if row.at > since:
                pools[row.heartbeat.pool, row.heartbeat.tier, row.heartbeat.queue].append(row.heartbeat)
        return [
            LivePool(
                pool,
                tier,
                queue,
                len(beats),
                sum(b.workers for b in beats),
                sum(b.running for b in beats),
                sum(b.paused_by is not None for b in beats),
            )
            for (pool, tier, queue), beats in pools.items()
        ]

    async def paused(self, since: datetime) -> list[PausedProcess]:
        self._tx.require_system(HEARTBEATS)
        latest: dict[str, HeartbeatRow] = {}
        for row in sorted(self._tx.rows(HEARTBEATS), key=lambda r: r.at):
            if row.at > since:
                latest[row.heartbeat.process_id] = row
        return [
            PausedProcess(process_id, row.heartbeat.paused_by, row.heartbeat.paused_since)
            for process_id, row in sorted(latest.items())
            if row.heartbeat.paused_by is not None
        ]

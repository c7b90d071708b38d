"""Worker pools: a pool per tier queue, and one per dedicated tenant queue made at runtime.

Each consumer process polls PostgreSQL for the desired state of each tier's pools (admins start and stop
them with `remit workers ...` or the admin API, from any process) and for dedicated queues, applies it,
and writes a heartbeat per pool that `remit workers status` reads.

The core-banking circuit breaker pauses every pool of the process while it is open (`follow_breaker`): their
AMQP consumers are cancelled, so the broker keeps the messages (and their TTLs keep running), and the pools
an admin wants running start again by themselves when it closes.
"""

import asyncio
import logging
import os
import socket
from dataclasses import dataclass
from datetime import datetime

from aio_pika.abc import AbstractRobustConnection

from app.consumer.breaker import BreakerState, BreakerStatus
from app.consumer.delivery import BodyLimits, Trusts, trusts_nobody
from app.consumer.pool_connections import PoolConnections
from app.consumer.worker import ProcessBatch, QueueWorkers
from app.messaging.queues import ready_count
from app.messaging.topology import TIERS, Topology
from app.observability.core_breaker import pause_reason
from app.observability.live_queues import Taken
from app.observability.metrics import ObserveStage, ignore_stage
from app.storage.ports.worker_pools import RUNNING, Heartbeat
from app.storage.unit_of_work import UnitOfWorkFactory

log = logging.getLogger("remit.pools")
DEDICATED_TIER = "enterprise"


@dataclass
class Pool:
    name: str
    tier: str
    workers: QueueWorkers

    @property
    def queue(self) -> str:
        return self.workers.queue_name

    @property
    def running(self) -> int:
        return self.workers.running

    async def start(self) -> None:
        await self.workers.start()

    async def stop(self) -> None:
        await self.workers.stop()


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    workers: dict[str, int]  # per tier
    prefetch: int
    max_batch: int
    bodies: BodyLimits
    batch_interval: float = 0.0  # seconds (QueueWorkers)


class PoolManager:
    def __init__(
        self,
        connection: AbstractRobustConnection,
        connections: PoolConnections,
        topology: Topology,
        settings: WorkerSettings,
        process: ProcessBatch,
        observe: ObserveStage = ignore_stage,
        trusts: Trusts = trusts_nobody,
    ) -> None:
        self._observe = observe
        self._trusts = trusts
        self._connection = connection  # for looking queues up; each pool consumes on one of `connections`
        self._connections = connections
        self._topology = topology
        self._settings = settings
        self._process = process
        self.process_id = f"{socket.gethostname()}:{os.getpid()}"
        self.paused_by: str | None = None  # why every pool is paused (the open breaker); None: not paused
        self.paused_since: datetime | None = None  # since when: the breaker's time of opening
        self._desired: dict[str, str] = {}  # tier -> desired state, as the last sync read it
        self._applying = asyncio.Lock()  # a sync and a pause or resume never interleave their starts and stops
        self.pools: dict[str, Pool] = {}  # the tiers' from the first sync on, and the dedicated queues'

    async def _pool(self, name: str, tier: str, queue: str, *, declare: bool = True) -> Pool:
        # A dedicated queue is made by routing and removed by `remit queues delete`; its workers must
        # never declare it back into existence, so they only look it up.
        arguments = self._topology.work_queue_arguments() if declare else None
        size = max(1, self._settings.workers.get(tier, 1))
        workers = QueueWorkers(
            await self._connections.of(name),
            queue,
            arguments,
            size,
            self._settings.prefetch,
            self._settings.max_batch,
            self._process,
            self._settings.bodies,
            self._observe,
            self._trusts,
            self._settings.batch_interval,
        )
        return Pool(name, tier, workers)

    async def sync(self, uow_factory: UnitOfWorkFactory) -> None:
        async with uow_factory() as uow:
            desired = await uow.worker_pools.desired_states()
            dedicated = await uow.tenants.dedicated()
        async with self._applying:
            self._desired = desired
            for tier in TIERS:
                if tier not in self.pools:
                    self.pools[tier] = await self._pool(tier, tier, self._topology.tier_queue(tier))
            for tenant_id in dedicated:
                await self._ensure_dedicated(tenant_id)
            await self._forget_deleted_queues()
            await self._apply()
        await self._heartbeat(uow_factory)

    async def _apply(self) -> None:
        for pool in list(self.pools.values()):
            if self.paused_by is None and self._desired.get(pool.tier, RUNNING) == RUNNING:
                await pool.start()
            else:
                await pool.stop()

    async def follow_breaker(self, status: BreakerStatus) -> None:
        """The core-banking breaker's listener: open pauses every pool, closed resumes the ones meant to run."""
        async with self._applying:
            opened = status.state is BreakerState.OPEN
            self.paused_by = pause_reason(status.last_failure) if opened else None
            self.paused_since = status.since if opened else None
            await self._apply()
        log.info("pools %s: %s", "paused" if self.paused_by else "resumed", status.state)

    async def _ensure_dedicated(self, tenant_id: str) -> None:
        name = f"tenant:{tenant_id}"
        if name in self.pools:
            return
        self.pools[name] = await self._pool(
            name, DEDICATED_TIER, self._topology.dedicated_queue(tenant_id), declare=False
        )
        log.info("started the dedicated pool of %s", tenant_id)

    async def _forget_deleted_queues(self) -> None:
        # A dedicated pool lives as long as its queue: it drains what a tenant left there after moving back.
        for name, pool in list(self.pools.items()):
            if name.startswith("tenant:") and await ready_count(self._connection, pool.queue) is None:
                await pool.stop()
                del self.pools[name]
                await self._connections.close(name)

    async def _heartbeat(self, uow_factory: UnitOfWorkFactory) -> None:
        beats = [
            Heartbeat(
                self.process_id, p.name, p.tier, p.queue, p.workers.size, p.running, self.paused_by, self.paused_since
            )
            for p in self.pools.values()
        ]
        async with uow_factory() as uow:
            await uow.worker_pools.beat(beats)
            await uow.commit()

    async def run_forever(self, uow_factory: UnitOfWorkFactory, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            try:
                await self.sync(uow_factory)
            except Exception:  # keep serving with the pools we have
                log.warning("pool sync failed", exc_info=True)

    def any_running(self) -> bool:
        return any(p.running for p in self.pools.values())

    def newest_taken(self, queue: str) -> Taken | None:
        """The newest message this process's pool on `queue` took (None: no pool on it, or nothing taken yet)."""
        for pool in self.pools.values():
            if pool.queue == queue:
                return pool.workers.newest
        return None

    async def stop_all(self) -> None:
        await asyncio.gather(*(p.stop() for p in self.pools.values()), return_exceptions=True)
        await self._connections.close_all()

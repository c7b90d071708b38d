"""Worker pools: tier pools made when the app is built, dedicated-queue pools made at runtime.

Each consumer process polls PostgreSQL for the desired state of each tier's pools (admins start and stop
them with `remit workers ...` or the admin API, from any process) and for dedicated queues, applies it,
and writes a heartbeat per pool that `remit workers status` reads.
"""

import asyncio
import logging
import os
import socket
from dataclasses import dataclass, field

from aio_pika.abc import AbstractConnection
from faststream.rabbit import RabbitBroker
from faststream.rabbit.subscriber import RabbitSubscriber
from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert

from app.consumer.handler import register_pool
from app.messaging.queues import ready_count
from app.messaging.topology import TIERS, Topology
from app.storage.tables import tenants, worker_heartbeats, worker_pools
from app.storage.unit_of_work import UnitOfWorkFactory

log = logging.getLogger("remit.pools")
DEDICATED_TIER = "enterprise"


@dataclass
class Pool:
    name: str
    tier: str
    queue: str
    subscribers: list[RabbitSubscriber] = field(default_factory=list)

    @property
    def running(self) -> int:
        return sum(1 for s in self.subscribers if s.running)

    async def start(self) -> None:
        for subscriber in self.subscribers:
            if not subscriber.running:
                await subscriber.start()

    async def stop(self) -> None:
        for subscriber in self.subscribers:
            if subscriber.running:
                await subscriber.stop()


class PoolManager:
    def __init__(self, broker: RabbitBroker, topology: Topology, workers: dict[str, int], prefetch: int) -> None:
        self._broker = broker
        self._topology = topology
        self._workers = workers
        self._prefetch = prefetch
        self.process_id = f"{socket.gethostname()}:{os.getpid()}"
        self.pools: dict[str, Pool] = {}
        for tier in TIERS:
            queue = topology.tier_queue(tier)
            self.pools[tier] = Pool(
                tier, tier, queue, register_pool(broker, topology, queue, self._size(tier), prefetch)
            )

    def _size(self, tier: str) -> int:
        return max(1, self._workers.get(tier, 1))

    async def sync(self, uow_factory: UnitOfWorkFactory, connection: AbstractConnection) -> None:
        async with uow_factory() as uow:
            states = await uow.connection.execute(select(worker_pools.c.tier, worker_pools.c.desired_state))
            desired: dict[str, str] = {row.tier: row.desired_state for row in states}
            query = select(tenants.c.tenant_id).where(tenants.c.dedicated_queue.is_(True))
            dedicated = (await uow.connection.execute(query)).scalars().all()
        for tenant_id in dedicated:
            await self._ensure_dedicated(tenant_id)
        await self._forget_deleted_queues(connection)
        for pool in list(self.pools.values()):
            if desired.get(pool.tier, "running") == "running":
                await pool.start()
            else:
                await pool.stop()
        await self._heartbeat(uow_factory)

    async def _ensure_dedicated(self, tenant_id: str) -> None:
        name = f"tenant:{tenant_id}"
        if name in self.pools:
            return
        queue = self._topology.dedicated_queue(tenant_id)
        subscribers = register_pool(self._broker, self._topology, queue, self._size(DEDICATED_TIER), self._prefetch)
        self.pools[name] = Pool(name, DEDICATED_TIER, queue, subscribers)
        log.info("started the dedicated pool of %s", tenant_id)

    async def _forget_deleted_queues(self, connection: AbstractConnection) -> None:
        # A dedicated pool lives as long as its queue: it drains what a tenant left there after moving back.
        for name, pool in list(self.pools.items()):
            if name.startswith("tenant:") and await ready_count(connection, pool.queue) is None:
                await pool.stop()
                del self.pools[name]

    async def _heartbeat(self, uow_factory: UnitOfWorkFactory) -> None:
        rows = [
            {
                "process_id": self.process_id,
                "pool": p.name,
                "tier": p.tier,
                "queue": p.queue,
                "workers": len(p.subscribers),
                "running": p.running,
            }
            for p in self.pools.values()
        ]
        statement = insert(worker_heartbeats).values(rows)
        statement = statement.on_conflict_do_update(
            index_elements=["process_id", "pool"],
            set_={"workers": statement.excluded.workers, "running": statement.excluded.running, "at": func.now()},
        )
        async with uow_factory() as uow:
            await uow.connection.execute(statement)
            await uow.commit()

    async def run_forever(self, uow_factory: UnitOfWorkFactory, connection: AbstractConnection, every: float) -> None:
        while True:
            await asyncio.sleep(every)  # the broker starts every pool itself; sync after it has
            try:
                await self.sync(uow_factory, connection)
            except Exception:  # keep serving with the pools we have
                log.warning("pool sync failed", exc_info=True)

    async def stop_all(self) -> None:
        await asyncio.gather(*(p.stop() for p in self.pools.values()), return_exceptions=True)

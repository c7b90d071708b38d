"""Worker pool control and heartbeats in PostgreSQL."""

from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.ports.worker_pools import Heartbeat, LivePool, PausedProcess
from app.storage.tables import worker_heartbeats, worker_pools

hb = worker_heartbeats.c


class SqlWorkerPools:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def desired_states(self) -> dict[str, str]:
        query = select(worker_pools.c.tier, worker_pools.c.desired_state)
        return {row.tier: row.desired_state for row in await self._connection.execute(query)}

    async def set_desired_state(self, tiers: Sequence[str], state: str, actor: str) -> None:
        for tier in tiers:
            statement = insert(worker_pools).values(tier=tier, desired_state=state, updated_by=actor)
            statement = statement.on_conflict_do_update(
                index_elements=["tier"], set_={"desired_state": state, "updated_by": actor, "updated_at": func.now()}
            )
            await self._connection.execute(statement)

    async def beat(self, heartbeats: Sequence[Heartbeat]) -> None:
        statement = insert(worker_heartbeats).values([asdict(h) for h in heartbeats])
        statement = statement.on_conflict_do_update(
            index_elements=["process_id", "pool"],
            set_={
                "workers": statement.excluded.workers,
                "running": statement.excluded.running,
                "paused_by": statement.excluded.paused_by,
                "paused_since": statement.excluded.paused_since,
                "at": func.now(),
            },
        )
        await self._connection.execute(statement)

    async def live(self, since: datetime) -> list[LivePool]:
        query = (
            select(
                hb.pool,
                hb.tier,
                hb.queue,
                func.count().label("processes"),
                func.sum(hb.workers).label("workers"),
                func.sum(hb.running).label("running"),
                func.count(hb.paused_by).label("paused"),
            )
            .where(hb.at > since)
            .group_by(hb.pool, hb.tier, hb.queue)
        )
        rows = await self._connection.execute(query)
        return [
            LivePool(r.pool, r.tier, r.queue, int(r.processes), int(r.workers), int(r.running), int(r.paused))
            for r in rows
        ]

    async def paused(self, since: datetime) -> list[PausedProcess]:
        # A process writes one heartbeat per pool, all with the same pause: its latest one speaks for it.
        query = (
            select(hb.process_id, hb.paused_by, hb.paused_since)
            .where(hb.at > since, hb.paused_by.is_not(None))
            .order_by(hb.process_id, hb.at.desc())
            .distinct(hb.process_id)
        )
        return [PausedProcess(r.process_id, r.paused_by, r.paused_since) for r in await self._connection.execute(query)]

"""Replay requests in PostgreSQL."""

from dataclasses import asdict

from sqlalchemy import insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.ports.replay_requests import NewReplayRequest, RequestEntry
from app.storage.tables import dead_letter_audit, dead_letter_replay_requests

rq = dead_letter_replay_requests.c
au = dead_letter_audit.c


class SqlReplayRequests:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def open(self, request: NewReplayRequest) -> int:
        statement = insert(dead_letter_replay_requests).values(**asdict(request)).returning(rq.request_id)
        return int((await self._connection.execute(statement)).scalar_one())

    async def settle(self, request_id: int, outcome: str) -> None:
        statement = update(dead_letter_replay_requests).where(rq.request_id == request_id).values(outcome=outcome)
        await self._connection.execute(statement)

    async def entries(self, tenant_id: str | None, limit: int) -> list[RequestEntry]:
        query = select(dead_letter_replay_requests).order_by(rq.request_id.desc()).limit(limit)
        if tenant_id is not None:
            touched = select(au.request_id).where(au.tenant_id == tenant_id, au.request_id.is_not(None))
            query = query.where(or_(rq.tenant_id == tenant_id, rq.request_id.in_(touched)))
        return [RequestEntry(**row._mapping) for row in await self._connection.execute(query)]

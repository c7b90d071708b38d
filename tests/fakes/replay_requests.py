"""In-memory replay requests."""

from dataclasses import asdict, replace

from app.storage.ports.audit import AuditEntry
from app.storage.ports.replay_requests import NewReplayRequest, RequestEntry
from tests.fakes.audit import TABLE as AUDIT
from tests.fakes.database import FakeTransaction

TABLE = "dead_letter_replay_requests"


class FakeReplayRequests:
    def __init__(self, tx: FakeTransaction) -> None:
        self._tx = tx

    async def open(self, request: NewReplayRequest) -> int:
        request_id = self._tx.db.next_id(TABLE)
        self._tx.insert(
            TABLE, request_id, RequestEntry(request_id=request_id, at=self._tx.db.clock(), **asdict(request))
        )
        return request_id

    async def settle(self, request_id: int, outcome: str) -> None:
        entry = self._tx.get(TABLE, request_id)
        if entry is not None:
            self._tx.put(TABLE, request_id, replace(entry, outcome=outcome))

    async def entries(self, tenant_id: str | None, limit: int) -> list[RequestEntry]:
        requests: list[RequestEntry] = self._tx.rows(TABLE)
        if tenant_id is not None:
            audit: list[AuditEntry] = self._tx.rows(AUDIT)
            touched = {e.request_id for e in audit if e.tenant_id == tenant_id and e.request_id is not None}
            requests = [r for r in requests if r.tenant_id == tenant_id or r.request_id in touched]
        return sorted(requests, key=lambda r: -r.request_id)[:limit]

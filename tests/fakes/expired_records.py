"""In-memory records past retention: each kind by its own age and its tenant's retention (or the default)."""

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from app.storage.ports.attempts import AttemptRecord
from app.storage.ports.dead_letters import DeadLetterRecord
from app.storage.ports.expired_records import Cutoff, RecordKind
from app.storage.ports.tenants import Tenant
from tests.fakes.attempts import TABLE as ATTEMPTS
from tests.fakes.database import FakeTransaction
from tests.fakes.dead_letters import TABLE as DEAD_LETTERS
from tests.fakes.idempotency import GENERATIONS, IdempotencyRow
from tests.fakes.idempotency import TABLE as RECORDS
from tests.fakes.tenants import TABLE as TENANTS

CLOSED = ("replayed", "resolved", "discarded")


class FakeExpiredRecords:
    def __init__(self, tx: FakeTransaction) -> None:
        self._tx = tx

    async def count(self, kind: RecordKind, cutoff: Cutoff) -> int:
        return len(self._expired(kind, cutoff))

    async def delete(self, kind: RecordKind, cutoff: Cutoff, limit: int) -> int:
        keys = self._expired(kind, cutoff)[:limit]
        for key in keys:
            self._tx.delete(kind, key)
        return len(keys)

    def _expired(self, kind: RecordKind, cutoff: Cutoff) -> list[Any]:
        tenants: list[Tenant] = self._tx.rows(TENANTS)
        days = {t.tenant_id: t.retention_days for t in tenants}

        def old(at: datetime, tenant: str | None) -> bool:
            own = days.get(tenant) if tenant is not None else None
            return at < cutoff.bound and at < cutoff.now - timedelta(days=own or cutoff.default_days)

        dead_letters: list[DeadLetterRecord] = self._tx.rows(DEAD_LETTERS)
        open_messages = {d.message_id for d in dead_letters if d.status == "open"}
        tests: dict[RecordKind, tuple[str, Callable[[Any], bool]]] = {
            "processed_messages": (RECORDS, lambda r: _record_old(r, old)),
            "delivery_attempts": (ATTEMPTS, lambda a: _attempt_old(a, old) and a.message_id not in open_messages),
            "dead_letters": (DEAD_LETTERS, lambda d: d.status in CLOSED and old(d.status_changed_at, d.tenant_id)),
            "transfer_key_generations": (GENERATIONS, lambda g: old(g.opened_at, g.tenant_id)),
        }
        table, expired = tests[kind]
        return [key for key, row in self._tx.items(table) if expired(row)]


def _record_old(row: IdempotencyRow, old: Callable[[datetime, str | None], bool]) -> bool:
    return old(row.processed_at, row.tenant_id)


def _attempt_old(attempt: AttemptRecord, old: Callable[[datetime, str | None], bool]) -> bool:
    return old(attempt.at, attempt.tenant_id)

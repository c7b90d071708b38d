"""An in-memory dead-letter audit trail."""

from dataclasses import asdict
from uuid import UUID

from app.storage.ports.audit import AuditEntry, NewAuditEntry
from tests.fakes.database import FakeTransaction

TABLE = "dead_letter_audit"


class FakeDeadLetterAudit:
    def __init__(self, tx: FakeTransaction) -> None:
        self._tx = tx

    async def add(self, entry: NewAuditEntry) -> None:
        audit_id = self._tx.db.next_id(TABLE)
        values = asdict(entry) | {"at": entry.at or self._tx.db.clock()}
        self._tx.insert(TABLE, audit_id, AuditEntry(audit_id=audit_id, **values))

    async def count_real(self, message_id: UUID, tenant_id: str | None, action: str) -> int:
        entries: list[AuditEntry] = self._tx.rows(TABLE)
        return sum(
            1
            for e in entries
            if e.message_id == message_id and e.tenant_id == tenant_id and e.action == action and not e.dry_run
        )

    async def entries(self, tenant_id: str | None, dead_letter_id: int | None, limit: int) -> list[AuditEntry]:
        entries: list[AuditEntry] = self._tx.rows(TABLE)
        chosen = [
            e
            for e in entries
            if (tenant_id is None or e.tenant_id == tenant_id)
            and (dead_letter_id is None or e.dead_letter_id == dead_letter_id)
        ]
        return sorted(chosen, key=lambda e: -e.audit_id)[:limit]

"""Records past retention in PostgreSQL: each batch picked by ctid, so it is one index range scan and one TID scan."""

from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.types import DateTime, Integer

from app.storage.ports.expired_records import Cutoff, RecordKind

# :bound is the oldest cutoff of any tenant, an index-friendly prefilter; the per-tenant cutoff
# (tenants.retention_days or the default) decides.
_SELECTIONS: dict[RecordKind, str] = {
    "processed_messages": """
        SELECT p.ctid FROM processed_messages p LEFT JOIN tenants t ON t.tenant_id = p.tenant_id
        WHERE p.processed_at < :bound
          AND p.processed_at < :now - make_interval(days => COALESCE(t.retention_days, :days))
    """,
    "delivery_attempts": """
        SELECT a.ctid FROM delivery_attempts a LEFT JOIN tenants t ON t.tenant_id = a.tenant_id
        WHERE a.at < :bound
          AND a.at < :now - make_interval(days => COALESCE(t.retention_days, :days))
          AND NOT EXISTS (
              SELECT 1 FROM dead_letters d WHERE d.message_id = a.message_id AND d.status = 'open')
    """,
    "dead_letters": """
        SELECT d.ctid FROM dead_letters d LEFT JOIN tenants t ON t.tenant_id = d.tenant_id
        WHERE d.status IN ('replayed', 'resolved', 'discarded', 'already_processed')
          AND d.status_changed_at < :bound
          AND d.status_changed_at < :now - make_interval(days => COALESCE(t.retention_days, :days))
    """,
    # Past retention no copy of the payment can arrive any more (retention is at least its TTL, the retry delays
    # and the replay window) and a replay is refused: nothing will be sent under any of its keys again.
    "transfer_key_generations": """
        SELECT g.ctid FROM transfer_key_generations g LEFT JOIN tenants t ON t.tenant_id = g.tenant_id
        WHERE g.opened_at < :bound
          AND g.opened_at < :now - make_interval(days => COALESCE(t.retention_days, :days))
    """,
}


class SqlExpiredRecords:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def count(self, kind: RecordKind, cutoff: Cutoff) -> int:
        statement = _bind(f"SELECT count(*) FROM ({_SELECTIONS[kind]}) s")
        return int((await self._connection.execute(statement, _params(cutoff))).scalar_one())

    async def delete(self, kind: RecordKind, cutoff: Cutoff, limit: int) -> int:
        statement = _bind(f"DELETE FROM {kind} WHERE ctid = ANY(ARRAY({_SELECTIONS[kind]} LIMIT :limit))").bindparams(
            bindparam("limit", type_=Integer)
        )
        return int((await self._connection.execute(statement, {**_params(cutoff), "limit": limit})).rowcount)


def _params(cutoff: Cutoff) -> dict[str, Any]:
    return {"now": cutoff.now, "bound": cutoff.bound, "days": cutoff.default_days}


def _bind(sql: str) -> Any:
    return text(sql).bindparams(
        bindparam("now", type_=DateTime(timezone=True)),
        bindparam("bound", type_=DateTime(timezone=True)),
        bindparam("days", type_=Integer),
    )

"""The run and its breaks, recorded in PostgreSQL; open breaks keep the age of their first sighting."""

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

import asyncpg
import pyarrow as pa

from reconciliation import statuses as st
from reconciliation.config import SYSTEM_SCOPE, libpq_dsn
from reconciliation.result import BREAK_SCHEMA, SUMMARY_SCHEMA, ReconcileResult
from reconciliation.snapshot import CORE_JOURNAL, TABLES

# A break is a message, (tenant_id, message_id): another tenant's break of the same message_id is another's.
_FIRST_SEEN_SQL = """
SELECT b.tenant_id, b.message_id::text AS message_id, min(b.first_seen_at) AS first_seen_at
FROM reconciliation_breaks b
JOIN reconciliation_runs r ON r.run_id = b.run_id
JOIN unnest($2::text[], $3::uuid[]) AS k(tenant_id, message_id)
  ON b.tenant_id = k.tenant_id AND b.message_id = k.message_id
WHERE r.as_of <= $1
GROUP BY b.tenant_id, b.message_id
"""

# A batch x currency whose control totals disagree: its break, like a message's, keeps the age of its first sighting.
_TOTALS_FIRST_SEEN_SQL = """
SELECT b.tenant_id, b.correlation_id, b.currency, min(b.first_seen_at) AS first_seen_at
FROM reconciliation_breaks b
JOIN reconciliation_runs r ON r.run_id = b.run_id
JOIN unnest($2::text[], $3::text[], $4::text[]) AS k(tenant_id, correlation_id, currency)
  ON b.tenant_id = k.tenant_id AND b.correlation_id = k.correlation_id AND b.currency = k.currency
WHERE r.as_of <= $1 AND b.message_id IS NULL
GROUP BY b.tenant_id, b.correlation_id, b.currency
"""

MessageKey = tuple[str, str]  # (tenant_id, message_id)
TotalsKey = tuple[str, str, str]  # (tenant_id, correlation_id, currency): a break of no message
BreakKey = MessageKey | TotalsKey

_BREAK_COLUMNS = (
    "run_id",
    "message_id",
    "correlation_id",
    "tenant_id",
    "currency",
    "status",
    "amount_cents",
    "detail",
    "first_seen_at",
    "age",
)


@dataclass(frozen=True)
class RunTimes:
    run_id: uuid.UUID
    started_at: datetime
    finished_at: datetime
    grace: timedelta


def _keys(breaks: pa.Table) -> list[BreakKey]:
    """What makes two runs' breaks the same break: the message, or (no message) the batch and currency."""
    columns = ("tenant_id", "message_id", "correlation_id", "currency")
    return [
        (tenant, message) if message is not None else (tenant, corr, ccy)
        for tenant, message, corr, ccy in zip(*(breaks[c].to_pylist() for c in columns), strict=True)
    ]


async def _first_seen(conn: asyncpg.Connection, breaks: pa.Table, as_of: datetime) -> dict[BreakKey, datetime]:
    keys = _keys(breaks)
    messages = [k for k in keys if len(k) == 2]
    totals = [k for k in keys if len(k) == 3]
    rows = await conn.fetch(_FIRST_SEEN_SQL, as_of, [k[0] for k in messages], [k[1] for k in messages])
    seen: dict[BreakKey, datetime] = {(r["tenant_id"], r["message_id"]): r["first_seen_at"] for r in rows}
    if totals:
        rows = await conn.fetch(_TOTALS_FIRST_SEEN_SQL, as_of, *(list(column) for column in zip(*totals, strict=True)))
        seen.update({(r["tenant_id"], r["correlation_id"], r["currency"]): r["first_seen_at"] for r in rows})
    return seen


def with_age(breaks: pa.Table, as_of: datetime, first_seen: dict[BreakKey, datetime]) -> pa.Table:
    """Add first_seen_at and age_seconds; a break nobody saw before is first seen at this as-of time."""
    seen = [first_seen.get(key, as_of) for key in _keys(breaks)]
    ages = [int((as_of - s).total_seconds()) for s in seen]
    return breaks.append_column("first_seen_at", pa.array(seen, pa.timestamp("us", tz="UTC"))).append_column(
        "age_seconds", pa.array(ages, pa.int64())
    )


def _run_row(result: ReconcileResult, times: RunTimes, outcome: str, error: str | None) -> dict[str, object]:
    counts: dict[str, int | None] = {f"{t.name}_rows": result.input_counts.get(t.name, 0) for t in TABLES}
    counts["core_journal_rows"] = result.input_counts.get(CORE_JOURNAL.name, 0) if result.three_way else None
    return {
        "run_id": times.run_id,
        "as_of": result.as_of,
        "started_at": times.started_at,
        "finished_at": times.finished_at,
        "grace_minutes": int(times.grace.total_seconds() // 60),
        **counts,
        "message_count": result.message_count,
        "break_count": result.breaks.num_rows,
        "pending_batches": result.batches_in(st.PENDING),
        "broken_batches": result.batches_in(st.BREAKS),
        "result": outcome,
        "duration": times.finished_at - times.started_at,
        "error": error,
    }


async def _insert_run(conn: asyncpg.Connection, row: dict[str, object]) -> None:
    names = ", ".join(row)
    params = ", ".join(f"${i}" for i in range(1, len(row) + 1))
    await conn.execute(f"INSERT INTO reconciliation_runs ({names}) VALUES ({params})", *row.values())


async def record_run(database_url: str, result: ReconcileResult, times: RunTimes) -> pa.Table:
    """Insert the run and its breaks in one transaction; returns the breaks with first_seen_at and age."""
    conn = await asyncpg.connect(libpq_dsn(database_url), server_settings=SYSTEM_SCOPE)
    try:
        async with conn.transaction():
            aged = with_age(result.breaks, result.as_of, await _first_seen(conn, result.breaks, result.as_of))
            await _insert_run(conn, _run_row(result, times, result.result, None))
            records = [
                (times.run_id, None if b["message_id"] is None else uuid.UUID(b["message_id"]), b["correlation_id"],
                 b["tenant_id"], b["currency"], b["status"], b["amount_cents"], b["detail"], b["first_seen_at"],
                 timedelta(seconds=b["age_seconds"]))
                for b in aged.to_pylist()
            ]  # fmt: skip
            await conn.copy_records_to_table("reconciliation_breaks", records=records, columns=_BREAK_COLUMNS)
    finally:
        await conn.close()
    return aged


async def record_failure(database_url: str, as_of: datetime, times: RunTimes, error: str) -> None:
    """A failed run is recorded too, so a missing nightly result is visible in the database."""
    empty = ReconcileResult(as_of=as_of, summary=SUMMARY_SCHEMA.empty_table(), breaks=BREAK_SCHEMA.empty_table())
    conn = await asyncpg.connect(libpq_dsn(database_url), server_settings=SYSTEM_SCOPE)
    try:
        await _insert_run(conn, _run_row(empty, times, "FAILED", error[:4000]))
    finally:
        await conn.close()

"""An in-memory dead-letter store."""

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import fields, replace
from datetime import datetime
from typing import Any
from uuid import UUID

from app.storage.ports.attempts import AttemptRecord
from app.storage.ports.dead_letters import (
    NO_TENANT,
    AgeBuckets,
    DeadLetterFilter,
    DeadLetterRecord,
    Grouping,
    KnownField,
    NewDeadLetter,
    OpenDeadLetters,
    StatRow,
)
from tests.fakes.attempts import TABLE as ATTEMPTS
from tests.fakes.database import FakeTransaction

TABLE = "dead_letters"
_COLUMNS = {f.name for f in fields(DeadLetterRecord)}


class FakeDeadLetters:
    def __init__(self, tx: FakeTransaction) -> None:
        self._tx = tx

    async def add(self, dead_letter: NewDeadLetter) -> bool:
        unknown = set(dead_letter) - _COLUMNS
        assert not unknown, f"no such columns: {unknown}"
        message_id, tenant = dead_letter["message_id"], dead_letter.get("tenant_id")
        same = [row for row in self._tx.rows(TABLE) if row.dedup_key == dead_letter["dedup_key"]]
        if same:  # another copy of the same failure: folded into the first (as SqlDeadLetters._merge)
            [filed] = same
            failed_at = dead_letter["last_failed_at"]
            first = min(filed.first_failed_at, failed_at)
            merged = replace(
                filed,
                last_failed_at=max(filed.last_failed_at, failed_at),
                first_failed_at=first,
                attempts=max(filed.attempts, int(dead_letter.get("attempts") or 0)),
            )
            self._tx.put(TABLE, filed.dead_letter_id, merged)
            self._settle_first(message_id, tenant, first)
            return False
        if any(row.dedup_key == dead_letter["dedup_key"] for row in self._tx.db.rows(TABLE)):
            return False  # filed in a scope this transaction cannot see
        now = self._tx.db.clock()
        first = self._earliest_failure(message_id, tenant, dead_letter["last_failed_at"])
        defaults = {
            "attempts": 0,
            "headers": {},
            "status": "open",
            "archived_at": now,
            "status_changed_at": now,
            "tenant_basis": "legacy",
            "claims": {},
            "security_event": False,
            "body_truncated": False,
        }
        values: dict[str, Any] = {name: None for name in _COLUMNS} | defaults | dict(dead_letter)
        values.update(dead_letter_id=self._tx.db.next_id(TABLE), first_failed_at=first)
        record = DeadLetterRecord(**values)
        self._tx.insert(TABLE, record.dead_letter_id, record)
        self._settle_first(message_id, tenant, first)
        return True

    def _settle_first(self, message_id: UUID | None, tenant: str | None, first: datetime) -> None:
        if message_id is not None:
            for row in self._tx.rows(TABLE):
                if _same_message(row, message_id, tenant) and row.first_failed_at > first:
                    self._tx.put(TABLE, row.dead_letter_id, replace(row, first_failed_at=first))

    async def get(
        self, dead_letter_id: int, tenant: str | None, *, for_update: bool = False
    ) -> DeadLetterRecord | None:
        row: DeadLetterRecord | None = self._tx.get(TABLE, dead_letter_id)
        return row if row is not None and (tenant is None or row.tenant_id == tenant) else None

    async def newest(self, where: DeadLetterFilter, limit: int) -> list[DeadLetterRecord]:
        return sorted(self._selected(where), key=lambda r: -r.dead_letter_id)[:limit]

    async def ids(self, where: DeadLetterFilter) -> list[int]:
        return sorted(r.dead_letter_id for r in self._selected(where))

    async def recent_values(self, field: KnownField, tenant: str | None, limit: int) -> list[str]:
        newest_first = sorted(self._selected(DeadLetterFilter(tenant=tenant)), key=lambda r: -r.dead_letter_id)
        values = (row.tenant_id if field == "tenant" else row.correlation_id for row in newest_first)
        return list(dict.fromkeys(v for v in values if v is not None))[:limit]

    async def set_status(self, dead_letter_id: int, status: str, now: datetime) -> None:
        row = self._tx.get(TABLE, dead_letter_id)
        if row is not None:
            self._tx.put(TABLE, dead_letter_id, replace(row, status=status, status_changed_at=now))

    async def totals(self, where: DeadLetterFilter, by: Grouping, ages: AgeBuckets, now: datetime) -> list[StatRow]:
        key: dict[Grouping, Callable[[DeadLetterRecord], str]] = {
            "total": lambda r: "all",
            "reason": lambda r: r.reason,
            "tenant": lambda r: r.tenant_id or NO_TENANT,
            "age": lambda r: _age(r.last_failed_at, ages, now),
        }
        counts: Counter[tuple[str, str | None]] = Counter()
        cents: Counter[tuple[str, str | None]] = Counter()
        for row in self._selected(where):
            group = (key[by](row), row.currency)
            counts[group] += 1
            cents[group] += row.amount_cents or 0
        ordered = sorted(counts, key=lambda g: (g[0], g[1] is None, g[1] or ""))  # PostgreSQL: NULLS LAST
        return [
            StatRow(group, currency, counts[group, currency], cents[group, currency]) for group, currency in ordered
        ]

    async def count_security_events(self, where: DeadLetterFilter) -> int:
        return sum(1 for row in self._selected(where) if row.security_event)

    async def open_by_tenant(self) -> list[OpenDeadLetters]:
        groups: dict[tuple[str | None, str, str | None], list[DeadLetterRecord]] = defaultdict(list)
        for row in self._tx.rows(TABLE):
            if row.status == "open":
                groups[row.tenant_id, row.reason, row.currency].append(row)
        return [
            OpenDeadLetters(tenant, reason, currency, len(rows), sum(r.amount_cents or 0 for r in rows))
            for (tenant, reason, currency), rows in groups.items()
        ]

    async def security_events_by_tenant(self) -> dict[str | None, int]:
        return dict(Counter(row.tenant_id for row in self._tx.rows(TABLE) if row.security_event))

    def _selected(self, where: DeadLetterFilter) -> list[DeadLetterRecord]:
        return [row for row in self._tx.rows(TABLE) if matches(where, row)]

    def _earliest_failure(self, message_id: UUID | None, tenant: str | None, failed_at: datetime) -> datetime:
        if message_id is None:
            return failed_at
        attempts: list[AttemptRecord] = self._tx.rows(ATTEMPTS)
        dead_letters: list[DeadLetterRecord] = self._tx.rows(TABLE)
        earlier = [r.first_failed_at for r in dead_letters if _same_message(r, message_id, tenant)]
        earlier += [a.at for a in attempts if a.message_id == message_id and a.tenant_id == tenant]
        return min([failed_at, *earlier])


def matches(where: DeadLetterFilter, row: DeadLetterRecord) -> bool:
    equal = (
        (row.tenant_id, where.tenant),
        (row.reason, where.reason),
        (row.correlation_id, where.batch),
        (row.currency, where.currency.upper() if where.currency else None),
        (row.status, where.status),
    )
    if any(wanted is not None and value != wanted for value, wanted in equal):
        return False
    if where.since is not None and row.last_failed_at < where.since:
        return False
    return where.until is None or row.last_failed_at < where.until


def _same_message(row: DeadLetterRecord, message_id: UUID, tenant: str | None) -> bool:
    return row.message_id == message_id and row.tenant_id == tenant


def _age(last_failed_at: datetime, ages: AgeBuckets, now: datetime) -> str:
    for name, younger in ages:
        if younger is None or last_failed_at > now - younger:
            return name
    return ages[-1][0]


def latest_dead_letter(tx: FakeTransaction, tenant_id: str, message_id: UUID) -> DeadLetterRecord | None:
    """The payment's newest dead letter of its own tenant (what decides where a payment is now)."""
    rows: list[DeadLetterRecord] = tx.rows(TABLE)
    mine = [r for r in rows if r.tenant_id == tenant_id and r.message_id == message_id]
    return max(mine, key=lambda r: r.dead_letter_id, default=None)

"""Small snapshot builders for tests: message lifecycles in, snapshot Parquet files out."""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from reconciliation.snapshot import (
    BATCH_TOTALS,
    BATCHES,
    DEAD_LETTERS,
    LEDGER,
    OUTBOX,
    PROCESSED_MESSAGES,
    SnapshotTable,
)

AS_OF = datetime(2025, 5, 2, tzinfo=UTC)
GRACE = timedelta(minutes=15)
TTL = timedelta(hours=24)
TENANT = "tenant-a"
_TABLES = (BATCHES, BATCH_TOTALS, OUTBOX, PROCESSED_MESSAGES, LEDGER, DEAD_LETTERS)
_PROCESSED_AT = AS_OF - timedelta(hours=1)


def mid(n: int) -> str:
    """A deterministic uuid string for message number n."""
    return f"00000000-0000-4000-8000-{n:012d}"


@dataclass
class Snapshot:
    """Rows per snapshot table; batch_totals are derived from the outbox unless set explicitly."""

    rows: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {t.name: [] for t in _TABLES})
    totals_override: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def accept(
        self, n: int, corr: str = "batch-1", amount: int = 1000, ccy: str = "AUD", age: timedelta = timedelta(hours=2)
    ) -> "Snapshot":
        accepted_at = AS_OF - age
        self.rows["outbox"].append(
            {"message_id": mid(n), "tenant_id": TENANT, "correlation_id": corr, "amount_cents": amount,
             "currency": ccy, "accepted_at": accepted_at, "expires_at": accepted_at + TTL}
        )  # fmt: skip
        return self

    def book(self, n: int, corr: str = "batch-1", amount: int = 1000, ccy: str = "AUD") -> "Snapshot":
        self.rows["ledger"].append(
            {"message_id": mid(n), "tenant_id": TENANT, "correlation_id": corr, "amount_cents": amount,
             "currency": ccy, "booked_at": AS_OF - timedelta(hours=1, seconds=len(self.rows["ledger"]))}
        )  # fmt: skip
        self.rows["processed_messages"].append(
            {"message_id": mid(n), "tenant_id": TENANT, "correlation_id": corr, "processed_at": _PROCESSED_AT}
        )
        return self

    def idempotency_only(self, n: int, corr: str = "batch-1") -> "Snapshot":
        self.rows["processed_messages"].append(
            {"message_id": mid(n), "tenant_id": TENANT, "correlation_id": corr, "processed_at": _PROCESSED_AT}
        )
        return self

    def dead_letter(
        self, n: int, reason: str, status: str = "open", corr: str = "batch-1", at: timedelta = timedelta(hours=1)
    ) -> "Snapshot":
        failed_at = AS_OF - at
        self.rows["dead_letters"].append(
            {"message_id": mid(n), "tenant_id": TENANT, "correlation_id": corr, "amount_cents": 1000,
             "currency": "AUD", "reason": reason, "status": status, "first_failed_at": failed_at,
             "last_failed_at": failed_at}
        )  # fmt: skip
        return self

    def totals(self, corr: str, ccy: str, **values: Any) -> "Snapshot":
        self.totals_override[(corr, ccy)] = values
        return self

    def _batch_totals(self) -> list[dict[str, Any]]:
        totals: dict[tuple[str, str], dict[str, Any]] = {}
        for row in self.rows["outbox"]:
            key = (row["correlation_id"], row["currency"])
            t = totals.setdefault(key, {"correlation_id": key[0], "currency": key[1], "tenant_id": TENANT,
                                        "accepted_count": 0, "accepted_cents": 0})  # fmt: skip
            t["accepted_count"] += 1
            t["accepted_cents"] += row["amount_cents"]
        for t in totals.values():
            t["control_count"], t["control_cents"] = t["accepted_count"], t["accepted_cents"]
        for key, values in self.totals_override.items():
            base = totals.setdefault(key, {"correlation_id": key[0], "currency": key[1], "tenant_id": TENANT,
                                           "accepted_count": 0, "accepted_cents": 0, "control_count": None,
                                           "control_cents": None})  # fmt: skip
            base.update(values)
        return list(totals.values())

    def _batches(self) -> list[dict[str, Any]]:
        corrs = sorted({r["correlation_id"] for r in self.rows["outbox"]})
        return [{"correlation_id": c, "tenant_id": TENANT, "accepted_count": 0, "rejected_count": 0,
                 "submitted_at": AS_OF - timedelta(days=1)} for c in corrs]  # fmt: skip

    def write(self, directory: Path) -> str:
        directory.mkdir(parents=True, exist_ok=True)
        tables = dict(self.rows, batch_totals=self._batch_totals(), batches=self._batches())
        for table in _TABLES:
            write_rows(table, tables[table.name], directory)
        return str(directory)


def write_rows(table: SnapshotTable, rows: list[dict[str, Any]], directory: Path) -> None:
    schema = table.arrow_schema()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), table.path(directory))

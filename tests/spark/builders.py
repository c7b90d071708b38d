"""Small snapshot builders for tests: message lifecycles in, snapshot Parquet files out."""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from reconciliation.snapshot import (
    BATCH_TOTALS,
    BATCHES,
    CORE_JOURNAL,
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

    rows: dict[str, list[dict[str, Any]]] = field(
        default_factory=lambda: {t.name: [] for t in (*_TABLES, CORE_JOURNAL)}
    )
    totals_override: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    three_way: bool = False  # write the core's journal (an external core), even when it is empty

    def accept(
        self,
        n: int,
        corr: str = "batch-1",
        amount: int = 1000,
        ccy: str = "AUD",
        age: timedelta = timedelta(hours=2),
        tenant: str = TENANT,
    ) -> "Snapshot":
        accepted_at = AS_OF - age
        self.rows["outbox"].append(
            {"message_id": mid(n), "tenant_id": tenant, "correlation_id": corr, "amount_cents": amount,
             "currency": ccy, "accepted_at": accepted_at, "expires_at": accepted_at + TTL}
        )  # fmt: skip
        return self

    def book(
        self, n: int, corr: str = "batch-1", amount: int = 1000, ccy: str = "AUD", tenant: str = TENANT
    ) -> "Snapshot":
        self.rows["ledger"].append(
            {"message_id": mid(n), "tenant_id": tenant, "correlation_id": corr, "amount_cents": amount,
             "currency": ccy, "booked_at": AS_OF - timedelta(hours=1, seconds=len(self.rows["ledger"]))}
        )  # fmt: skip
        return self.idempotency_only(n, corr, tenant)

    def idempotency_only(self, n: int, corr: str = "batch-1", tenant: str = TENANT, **extra: Any) -> "Snapshot":
        self.rows["processed_messages"].append(
            {"message_id": mid(n), "tenant_id": tenant, "correlation_id": corr, "processed_at": _PROCESSED_AT,
             "source": "outbox", **extra}
        )  # fmt: skip
        return self

    def recorded_in_core(self, n: int, transfer_id: str, corr: str = "batch-1", tenant: str = TENANT) -> "Snapshot":
        """remit's record of a payment an external core booked: its idempotency record with the core's id."""
        return self.idempotency_only(n, corr, tenant, core_transfer_id=transfer_id)

    def direct(
        self,
        n: int,
        corr: str = "direct-1",
        amount: int = 1000,
        ccy: str = "AUD",
        tenant: str = TENANT,
        transfer_id: str | None = None,
    ) -> "Snapshot":
        """A payment published directly over AMQP: no outbox row; its record says what it moved."""
        return self.idempotency_only(
            n, corr, tenant, source="amqp", amount_cents=amount, currency=ccy, core_transfer_id=transfer_id
        )

    def core(
        self,
        n: int,
        transfer_id: str,
        amount: int = 1000,
        ccy: str = "AUD",
        tenant: str = TENANT,
        at: timedelta = timedelta(minutes=59),
    ) -> "Snapshot":
        """A transfer in the core's journal under the key (tenant, mid(n)), booked `at` before the as-of time
        (negative: after it)."""
        self.three_way = True
        self.rows["core_journal"].append(
            {"tenant_id": tenant, "message_id": mid(n), "transfer_id": transfer_id, "amount_cents": amount,
             "currency": ccy, "booked_at": AS_OF - at}
        )  # fmt: skip
        return self

    def dead_letter(
        self,
        n: int,
        reason: str,
        status: str = "open",
        corr: str = "batch-1",
        at: timedelta = timedelta(hours=1),
        tenant: str = TENANT,
    ) -> "Snapshot":
        failed_at = AS_OF - at
        self.rows["dead_letters"].append(
            {"message_id": mid(n), "tenant_id": tenant, "correlation_id": corr, "amount_cents": 1000,
             "currency": "AUD", "reason": reason, "status": status, "first_failed_at": failed_at,
             "last_failed_at": failed_at}
        )  # fmt: skip
        return self

    def totals(self, corr: str, ccy: str, **values: Any) -> "Snapshot":
        self.totals_override[(corr, ccy)] = values
        return self

    def _owners(self) -> dict[str, str]:
        """Each batch's tenant: a batch id belongs to the tenant that submitted it."""
        return {r["correlation_id"]: r["tenant_id"] for r in self.rows["outbox"]}

    def _batch_totals(self) -> list[dict[str, Any]]:
        owners = self._owners()
        totals: dict[tuple[str, str], dict[str, Any]] = {}
        for row in self.rows["outbox"]:
            key = (row["correlation_id"], row["currency"])
            t = totals.setdefault(key, {"correlation_id": key[0], "currency": key[1], "tenant_id": row["tenant_id"],
                                        "accepted_count": 0, "accepted_cents": 0})  # fmt: skip
            t["accepted_count"] += 1
            t["accepted_cents"] += row["amount_cents"]
        for t in totals.values():
            t["control_count"], t["control_cents"] = t["accepted_count"], t["accepted_cents"]
        for key, values in self.totals_override.items():
            base = totals.setdefault(key, {"correlation_id": key[0], "currency": key[1],
                                           "tenant_id": owners.get(key[0], TENANT), "accepted_count": 0,
                                           "accepted_cents": 0, "control_count": None,
                                           "control_cents": None})  # fmt: skip
            base.update(values)
        return list(totals.values())

    def _batches(self) -> list[dict[str, Any]]:
        return [{"correlation_id": c, "tenant_id": t, "accepted_count": 0, "rejected_count": 0,
                 "submitted_at": AS_OF - timedelta(days=1)} for c, t in sorted(self._owners().items())]  # fmt: skip

    def write(self, directory: Path) -> str:
        directory.mkdir(parents=True, exist_ok=True)
        tables = dict(self.rows, batch_totals=self._batch_totals(), batches=self._batches())
        for table in (*_TABLES, CORE_JOURNAL) if self.three_way else _TABLES:
            write_rows(table, tables[table.name], directory)
        return str(directory)


def write_rows(table: SnapshotTable, rows: list[dict[str, Any]], directory: Path) -> None:
    pq.write_table(table.to_arrow(rows), table.path(directory))


def read_rows(table: SnapshotTable, directory: Path) -> list[dict[str, Any]]:
    """A snapshot file's rows as the builders write them (message_ids as text)."""
    return table.to_rows(pq.read_table(table.path(directory)))

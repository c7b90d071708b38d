"""Export from a real PostgreSQL database, reconcile, and find the run (and aged breaks) recorded there."""

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest
from pyspark.sql import SparkSession

from reconciliation.config import RunConfig
from reconciliation.job import export, finish, reconcile

pytestmark = pytest.mark.spark

T0 = datetime(2025, 5, 1, 12, tzinfo=UTC)


MSG = [uuid.UUID(int=n) for n in range(1, 5)]


async def _seed(url: str) -> None:
    conn = await asyncpg.connect(url.replace("+asyncpg", ""))
    try:
        await conn.execute("INSERT INTO tenants (tenant_id, name) VALUES ('acme', 'Acme')")
        await conn.execute("INSERT INTO batches VALUES ('batch-1', 'acme', 'f.csv', repeat('a', 64), 4, 0, $1)", T0)
        # The file's control record said 5 payments / 1,250 cents over its 4 rows / 1,000 cents: a totals break.
        await conn.execute("INSERT INTO batch_totals VALUES ('batch-1', 'AUD', 'acme', 4, 1000, 5, 1250)")
        for seq, mid in enumerate(MSG):
            await conn.execute(
                "INSERT INTO outbox (message_id, tenant_id, correlation_id, seq, payment_reference, amount_cents,"
                " currency, body, accepted_at, expires_at) VALUES ($1, 'acme', 'batch-1', $2, $3, 250, 'AUD',"
                " '\\x00', $4, $5)",
                mid, seq, f"ref-{seq}", T0, T0 + timedelta(hours=24),
            )  # fmt: skip
        # 1: processed; 2: dead-lettered; 3: never heard of again (missing after TTL); 4: booked after as-of.
        for mid, booked in ((MSG[0], T0 + timedelta(minutes=1)), (MSG[3], T0 + timedelta(days=5))):
            await conn.execute(
                "INSERT INTO ledger (message_id, tenant_id, correlation_id, payment_reference, amount_cents,"
                " currency, debtor_bsb, debtor_account, creditor_bsb, creditor_account, booked_at)"
                " VALUES ($1, 'acme', 'batch-1', 'r', 250, 'AUD', '062-000', '1', '062-001', '2', $2)",
                mid, booked,
            )  # fmt: skip
            await conn.execute("INSERT INTO processed_messages VALUES ($1, 'acme', 'batch-1', 1, $2)", mid, booked)
        await conn.execute(
            "INSERT INTO dead_letters (dedup_key, message_id, tenant_id, correlation_id, amount_cents, currency,"
            " reason, body, body_length, body_sha256, first_failed_at, last_failed_at) VALUES ('k2', $1, 'acme',"
            " 'batch-1', 250, 'AUD', 'invalid', '\\x00', 1, repeat('0', 64), $2, $2)",
            MSG[1], T0 + timedelta(minutes=2),
        )  # fmt: skip
        # Between the two runs, another tenant books a payment of its own (a direct publish, never accepted)
        # under acme's lost message_id and amount: it must not pass for acme's payment.
        squat = T0 + timedelta(days=2, hours=12)
        await conn.execute("INSERT INTO tenants (tenant_id, name) VALUES ('zeta', 'Zeta')")
        await conn.execute(
            "INSERT INTO ledger (message_id, tenant_id, correlation_id, payment_reference, amount_cents, currency,"
            " debtor_bsb, debtor_account, creditor_bsb, creditor_account, booked_at)"
            " VALUES ($1, 'zeta', 'batch-1', 'r', 250, 'AUD', '062-000', '1', '062-001', '2', $2)",
            MSG[2], squat,
        )  # fmt: skip
        await conn.execute("INSERT INTO processed_messages VALUES ($1, 'zeta', 'batch-1', 1, $2)", MSG[2], squat)
    finally:
        await conn.close()


async def _fetch(url: str, sql: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(url.replace("+asyncpg", ""))
    try:
        return list(await conn.fetch(sql))
    finally:
        await conn.close()


def _run(spark: SparkSession, url: str, tmp_path: Path, as_of: datetime) -> str:
    config = RunConfig(as_of=as_of, out_dir=str(tmp_path), snapshot_dir=str(tmp_path / "snapshot"), database_url=url)
    counts = export(config)
    assert counts["outbox"] == 4
    result = reconcile(spark, config)
    finish(config, result, uuid.uuid4(), datetime.now(UTC))
    return result.result


def test_export_reconcile_record(spark: SparkSession, database: str, tmp_path: Path) -> None:
    asyncio.run(_seed(database))
    first_as_of, second_as_of = T0 + timedelta(days=2), T0 + timedelta(days=3)

    assert _run(spark, database, tmp_path / "run1", first_as_of) == "BREAKS"
    assert _run(spark, database, tmp_path / "run2", second_as_of) == "BREAKS"

    runs = asyncio.run(_fetch(database, "SELECT * FROM reconciliation_runs ORDER BY as_of"))
    assert [(r["result"], r["outbox_rows"], r["ledger_rows"], r["break_count"]) for r in runs] == [
        ("BREAKS", 4, 1, 3),  # the bookings after as-of are not in the snapshot; the totals' break counts
        ("BREAKS", 4, 2, 4),
    ]
    breaks = asyncio.run(
        _fetch(
            database,
            "SELECT b.*, r.as_of FROM reconciliation_breaks b JOIN reconciliation_runs r"
            " USING (run_id) ORDER BY r.as_of, b.message_id",
        )
    )
    first = {(b["tenant_id"], b["message_id"], b["status"]) for b in breaks if b["as_of"] == first_as_of}
    assert first == {("acme", MSG[2], "missing"), ("acme", MSG[3], "missing"), ("acme", None, "control_totals")}
    [totals] = [b for b in breaks if b["message_id"] is None and b["as_of"] == first_as_of]
    assert (totals["correlation_id"], totals["currency"], totals["amount_cents"]) == ("batch-1", "AUD", 1000)
    assert totals["detail"] == (
        "control totals disagree: the file's control record says 5 payment(s) / 1,250 cents; batch totals 4 "
        "payment(s) / 1,000 cents; the outbox holds 4 payment(s) / 1,000 cents from the file"
    )
    # The second run carries acme's first sightings forward (first_seen_at stays, age grows by a day);
    # zeta's break of the same message_id is zeta's own, first seen now.
    second = {(b["tenant_id"], b["message_id"]): b for b in breaks if b["as_of"] == second_as_of}
    assert {k: b["status"] for k, b in second.items()} == {
        ("acme", MSG[2]): "missing",
        ("acme", MSG[3]): "missing",
        ("zeta", MSG[2]): "unexpected",
        ("acme", None): "control_totals",
    }
    assert {k: (b["first_seen_at"], b["age"]) for k, b in second.items()} == {
        ("acme", MSG[2]): (first_as_of, timedelta(days=1)),
        ("acme", MSG[3]): (first_as_of, timedelta(days=1)),
        ("zeta", MSG[2]): (second_as_of, timedelta(0)),
        ("acme", None): (first_as_of, timedelta(days=1)),  # the batch's totals, first seen in the first run
    }
    assert (tmp_path / "run2" / "summary.csv").exists()
    assert (tmp_path / "run2" / "breaks.parquet").exists()

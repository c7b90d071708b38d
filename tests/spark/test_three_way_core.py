"""Three-way reconciliation end to end: the reference core as its own process with its own database, transfers
booked there over its HTTP API under remit's keys, remit's records in a throwaway PostgreSQL database, and the
job exporting both (remit's tables, then the core's GET /journal) and reconciling them."""

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from pyspark.sql import SparkSession

from reconciliation.config import RunConfig
from reconciliation.job import export, finish, reconcile
from tests.utils.corebank import CoreBank, dsn, open_account, transfer
from tests.utils.services import eventually

pytestmark = pytest.mark.spark

TENANT = "acme"


async def _book(core: CoreBank, items: list[tuple[str, int]]) -> dict[str, str]:
    """Book (key, amount) transfers in AUD between two fresh accounts; the core's transfer id per key. Returns
    once the journal export shows them: a transaction running anywhere on the shared PostgreSQL server holds
    the export back (docs/core-banking.md), and this test is about what the job does with what it reads."""
    async with core.client(timeout=30) as client:
        debtor, creditor = await open_account(client, 10**9), await open_account(client)
        batch = [{**transfer(debtor, creditor, amount), "idempotency_key": key} for key, amount in items]
        results = (await client.post("/transfers/batch", json={"transfers": batch})).json()["results"]
        assert [r["status"] for r in results] == ["booked"] * len(items)

        async def exported() -> bool:
            journal = (await client.get("/journal", params={"limit": 5000})).json()["transfers"]
            return {key for key, _ in items} <= {t["idempotency_key"] for t in journal}

        await eventually(exported, timeout=120, poll=1)
    return {r["idempotency_key"]: r["transfer_id"] for r in results}


class Remit:
    """remit's side, written as its ingress and its consumer (with an external core) write it."""

    def __init__(self, url: str) -> None:
        self.dsn = url.replace("+asyncpg", "")

    async def _execute(self, sql: str, *args: Any) -> None:
        conn = await asyncpg.connect(self.dsn)
        try:
            await conn.execute(sql, *args)
        finally:
            await conn.close()

    async def batch(self, corr: str, amounts: list[int], accepted_at: datetime) -> list[uuid.UUID]:
        ids = [uuid.uuid4() for _ in amounts]
        await self._execute("INSERT INTO tenants (tenant_id, name) VALUES ($1, 'Acme') ON CONFLICT DO NOTHING", TENANT)
        await self._execute(
            "INSERT INTO batches VALUES ($1, $2, 'f.csv', repeat('a', 64), $3, 0, $4)",
            corr, TENANT, len(amounts), accepted_at,
        )  # fmt: skip
        await self._execute(
            "INSERT INTO batch_totals VALUES ($1, 'AUD', $2, $3, $4, $3, $4)", corr, TENANT, len(amounts), sum(amounts)
        )
        for seq, (mid, amount) in enumerate(zip(ids, amounts, strict=True)):
            await self._execute(
                "INSERT INTO outbox (message_id, tenant_id, correlation_id, seq, payment_reference, amount_cents,"
                " currency, body, accepted_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, 'AUD', '\\x00', $7, $8)",
                mid, TENANT, corr, seq, f"{corr}-{seq}", amount, accepted_at, accepted_at + timedelta(hours=24),
            )  # fmt: skip
        return ids

    async def recorded(
        self,
        mid: uuid.UUID,
        corr: str,
        transfer_id: str,
        source: str = "outbox",
        amount: int | None = None,
        generation: int = 1,
    ) -> None:
        """The consumer's idempotency record with the core's transfer id and the key generation it was booked
        under (and, for a direct publish, its money)."""
        await self._execute(
            "INSERT INTO processed_messages (message_id, tenant_id, correlation_id, attempt, processed_at,"
            " core_transfer_id, source, amount_cents, currency, core_key_generation)"
            " VALUES ($1, $2, $3, 1, now() - interval '1 minute', $4, $5, $6, 'AUD', $7)",
            mid, TENANT, corr, transfer_id, source, amount, generation,
        )  # fmt: skip

    async def ledger(self, mid: uuid.UUID, corr: str, amount: int) -> None:
        """The local ledger row remit's external adapter writes for a transfer the core booked."""
        await self._execute(
            "INSERT INTO ledger (message_id, tenant_id, correlation_id, payment_reference, amount_cents, currency,"
            " debtor_bsb, debtor_account, creditor_bsb, creditor_account)"
            " VALUES ($1, $2, $3, 'r', $4, 'AUD', '062-000', '100001', '062-001', '200002')",
            mid, TENANT, corr, amount,
        )  # fmt: skip


def key(mid: uuid.UUID) -> str:
    return f"{TENANT}:{mid}"


def _run(spark: SparkSession, database: str, core: CoreBank, out: Path) -> tuple[Any, dict[str, int]]:
    config = RunConfig(
        as_of=datetime.now(UTC),
        out_dir=str(out),
        snapshot_dir=str(out / "snapshot"),
        database_url=database,
        core_url=core.url,
        core_token=core.token,
    )
    counts = export(config)
    result = reconcile(spark, config)
    finish(config, result, uuid.uuid4(), datetime.now(UTC))
    return result, counts


def test_three_way_against_the_reference_core(
    spark: SparkSession, database: str, core: CoreBank, tmp_path: Path
) -> None:
    remit, now = Remit(database), datetime.now(UTC)
    # A clean day: a batch of three booked in the core and recorded by remit, one direct publish likewise, and a
    # transfer of another channel (not remit's key) in the same core.
    clean = asyncio.run(remit.batch("batch-1", [100, 200, 300], now - timedelta(hours=1)))
    direct = uuid.uuid4()
    ids = asyncio.run(_book(core, [*[(key(m), a) for m, a in zip(clean, [100, 200, 300], strict=True)],
                                   (key(direct), 50), ("teller-7:counter-deposit-1", 75)]))  # fmt: skip
    for mid, amount in zip(clean, [100, 200, 300], strict=True):
        asyncio.run(remit.recorded(mid, "batch-1", ids[key(mid)]))
        asyncio.run(remit.ledger(mid, "batch-1", amount))  # remit's copy of the core's transfer: not a duplicate
    asyncio.run(remit.recorded(direct, "direct-1", ids[key(direct)], source="amqp", amount=50))

    result, counts = _run(spark, database, core, tmp_path / "clean")

    assert (result.result, result.three_way, result.breaks.num_rows) == ("RECONCILED", True, 0)
    assert (counts["core_journal"], counts["core_journal_foreign"]) == (4, 1)
    rows = {r["correlation_id"]: r for r in result.summary.to_pylist()}
    assert (rows["batch-1"]["core_booked_count"], rows["batch-1"]["core_booked_cents"]) == (3, 600)
    assert (rows["direct-1"]["amqp_count"], rows["direct-1"]["core_booked_count"]) == (1, 1)

    # Then each kind of break: booked in the core for a payment that expired unrecorded (the unknown outcome
    # never resolved), recorded by remit but never booked in the core, and booked for another amount.
    lost, phantom, other = asyncio.run(remit.batch("batch-2", [400, 500, 600], now - timedelta(days=2)))
    more = asyncio.run(_book(core, [(key(lost), 400), (key(other), 601)]))
    asyncio.run(remit.recorded(phantom, "batch-2", "424242"))
    asyncio.run(remit.recorded(other, "batch-2", more[key(other)]))
    asyncio.run(remit.ledger(other, "batch-2", 600))

    result, counts = _run(spark, database, core, tmp_path / "broken")

    assert result.result == "BREAKS"
    found = zip(result.breaks["message_id"].to_pylist(), result.breaks["status"].to_pylist(), strict=True)
    assert dict(found) == {str(lost): "core_only", str(phantom): "remit_only", str(other): "core_mismatch"}
    assert counts["core_journal"] == 6
    runs = asyncio.run(_fetch(database, "SELECT result, core_journal_rows FROM reconciliation_runs ORDER BY as_of"))
    assert [tuple(r) for r in runs] == [("RECONCILED", 4), ("BREAKS", 6)]
    recorded = asyncio.run(_fetch(database, "SELECT status FROM reconciliation_breaks ORDER BY status"))
    assert [r["status"] for r in recorded] == ["core_mismatch", "core_only", "remit_only"]


async def _book_again(core: CoreBank, idempotency_key: str) -> None:
    """A second transfer under a key the core booked already: what a core that books one key twice holds. The
    reference core cannot (a unique index on the key, rule 2 of docs/core-banking.md); its database, this test's
    own, is made into one that can."""
    conn = await asyncpg.connect(dsn(core.database_url))
    try:
        unique = await conn.fetchval(
            "SELECT conname FROM pg_constraint WHERE conrelid = 'transfers'::regclass AND contype = 'u'"
        )
        await conn.execute(f'ALTER TABLE transfers DROP CONSTRAINT "{unique}"')
        await conn.execute(
            "INSERT INTO transfers (idempotency_key, status, amount_cents, currency, debtor_bsb, debtor_account,"
            " creditor_bsb, creditor_account, reference, txid) SELECT idempotency_key, status, amount_cents, currency,"
            " debtor_bsb, debtor_account, creditor_bsb, creditor_account, reference, txid_current() FROM transfers"
            " WHERE idempotency_key = $1",
            idempotency_key,
        )
    finally:
        await conn.close()
    async with core.client(timeout=30) as client:

        async def exported() -> bool:
            journal = (await client.get("/journal", params={"limit": 5000})).json()["transfers"]
            return sum(1 for t in journal if t["idempotency_key"] == idempotency_key) == 2

        await eventually(exported, timeout=120, poll=1)


def test_a_core_that_books_one_key_twice_is_a_core_duplicate(
    spark: SparkSession, database: str, core: CoreBank, tmp_path: Path
) -> None:
    """Issue 37, B: against a core written independently, keys booked twice were core_mismatch or processed, and
    duplicate_count was 0."""
    remit, now = Remit(database), datetime.now(UTC)
    twice, once = asyncio.run(remit.batch("batch-3", [700, 800], now - timedelta(hours=1)))
    ids = asyncio.run(_book(core, [(key(twice), 700), (key(once), 800)]))
    for mid, amount in ((twice, 700), (once, 800)):
        asyncio.run(remit.recorded(mid, "batch-3", ids[key(mid)]))
        asyncio.run(remit.ledger(mid, "batch-3", amount))
    asyncio.run(_book_again(core, key(twice)))

    result, counts = _run(spark, database, core, tmp_path / "twice")

    assert (result.result, counts["core_journal"]) == ("BREAKS", 3)
    lines = zip(*(result.breaks[c].to_pylist() for c in ("message_id", "status", "detail")), strict=True)
    assert {m: (status, detail) for m, status, detail in lines} == {
        str(twice): ("core_duplicate", "2 transfers in the core's journal under one key (the largest 700 AUD); "
                     "accepted 700 AUD"),
    }  # fmt: skip
    [row] = result.summary.to_pylist()
    assert {k: row[k] for k in ("core_duplicate_count", "duplicate_count", "processed_count", "break_count")} == {
        "core_duplicate_count": 1,
        "duplicate_count": 1,
        "processed_count": 1,
        "break_count": 1,
    }
    recorded = asyncio.run(_fetch(database, "SELECT message_id::text, status FROM reconciliation_breaks"))
    assert [tuple(r) for r in recorded] == [(str(twice), "core_duplicate")]


async def _fetch(url: str, sql: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(url.replace("+asyncpg", ""))
    try:
        return list(await conn.fetch(sql))
    finally:
        await conn.close()


async def _refused_then_booked(core: CoreBank, mid: uuid.UUID, amount: int) -> str:
    """The core refuses the payment's first key (the creditor's account closed), the account is reopened, and a
    forced replay's new attempt is booked under key generation 2; the core's transfer id of it."""
    async with core.client(timeout=30) as client:
        debtor, creditor = await open_account(client, 10**9), await open_account(client, status="closed")
        first = await client.post(
            "/transfers", json=transfer(debtor, creditor, amount), headers={"Idempotency-Key": key(mid)}
        )
        assert first.json()["status"] == "rejected", first.text
        reopened = f"/accounts/{creditor.bsb}/{creditor.number}/{creditor.currency}/status"
        assert (await client.put(reopened, json={"status": "open"})).status_code == 200
        second = await client.post(
            "/transfers", json=transfer(debtor, creditor, amount), headers={"Idempotency-Key": f"{key(mid)}:2"}
        )
        assert second.json()["status"] == "booked", second.text

        async def exported() -> bool:
            journal = (await client.get("/journal", params={"limit": 5000})).json()["transfers"]
            return f"{key(mid)}:2" in {t["idempotency_key"] for t in journal}

        await eventually(exported, timeout=120, poll=1)
    return str(second.json()["transfer_id"])


def test_a_new_attempt_under_a_later_key_generation_reconciles(
    spark: SparkSession, database: str, core: CoreBank, tmp_path: Path
) -> None:
    """The first key's refusal moved no money and is not in the journal; the booking under generation 2 is the
    payment's one transfer, which remit recorded: RECONCILED, the payment counted once."""
    remit = Remit(database)
    [mid] = asyncio.run(remit.batch("batch-3", [700], datetime.now(UTC) - timedelta(hours=1)))
    transfer_id = asyncio.run(_refused_then_booked(core, mid, 700))
    asyncio.run(remit.recorded(mid, "batch-3", transfer_id, generation=2))
    asyncio.run(remit.ledger(mid, "batch-3", 700))

    result, counts = _run(spark, database, core, tmp_path / "generation")

    assert (result.result, result.breaks.num_rows, counts["core_journal"]) == ("RECONCILED", 0, 1)
    [row] = result.summary.to_pylist()
    assert (row["core_booked_count"], row["core_booked_cents"]) == (1, 700)

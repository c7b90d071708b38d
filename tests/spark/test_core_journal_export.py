"""The core's journal into the snapshot: remit's keys only, and followed until every transfer remit recorded has
come (a transaction running on the core's server holds the export back), or until the catch-up time passes."""

import asyncio
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from reconciliation.core_journal import export_core_journal, remit_key, split_key
from reconciliation.snapshot import CORE_JOURNAL, PROCESSED_MESSAGES
from tests.spark.builders import read_rows, write_rows
from tests.utils.corebank import Acct, CoreBank, dsn, open_account, transfer

pytestmark = pytest.mark.spark


async def _book(core: CoreBank, key: str, amount: int) -> str:
    async with core.client(timeout=30) as client:
        a, b = await open_account(client, 10**6), await open_account(client)
        response = await client.post("/transfers", json=transfer(a, b, amount), headers={"Idempotency-Key": key})
    assert response.status_code == 201, response.text
    return str(response.json()["transfer_id"])


def _remit_recorded(snapshot: Path, tenant: str, message_id: str, transfer_id: str, generation: int = 1) -> None:
    row = {"message_id": message_id, "tenant_id": tenant, "correlation_id": "b", "processed_at": datetime.now(UTC),
           "core_transfer_id": transfer_id, "source": "outbox", "core_key_generation": generation}  # fmt: skip
    write_rows(PROCESSED_MESSAGES, [row], snapshot)


async def _book_between(core: CoreBank, debtor: Acct, creditor: Acct, key: str, amount: int) -> str:
    async with core.client(timeout=30) as client:
        response = await client.post(
            "/transfers", json=transfer(debtor, creditor, amount), headers={"Idempotency-Key": key}
        )
    assert response.status_code == 201, response.text
    assert response.json()["status"] == "booked", response.text
    return str(response.json()["transfer_id"])


class OlderTransaction:
    """A transaction on the core's database server older than the bookings that follow: until it ends, the
    export holds them back."""

    def __init__(self, core: CoreBank) -> None:
        self.core, self.opened, self.end = core, threading.Event(), threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._hold()), daemon=True)

    async def _hold(self) -> None:
        conn = await asyncpg.connect(dsn(self.core.database_url))
        try:
            async with conn.transaction():
                await conn.fetchval("SELECT pg_current_xact_id()")
                self.opened.set()
                await asyncio.to_thread(self.end.wait)
        finally:
            await conn.close()

    def __enter__(self) -> "OlderTransaction":
        self.thread.start()
        assert self.opened.wait(10)
        return self

    def __exit__(self, *_: object) -> None:
        self.end.set()
        self.thread.join(10)


def test_only_remits_keys_and_the_export_is_followed_until_the_recorded_transfer_comes(
    core: CoreBank, tmp_path: Path
) -> None:
    tenant, message_id = "acme", str(uuid.uuid4())
    asyncio.run(_book(core, "teller-7:counter-1", 75))  # another channel's transfer in the same core
    with OlderTransaction(core) as older:
        transfer_id = asyncio.run(_book(core, f"{tenant}:{message_id}", 1234))
        _remit_recorded(tmp_path, tenant, message_id, transfer_id)
        threading.Timer(2.0, older.end.set).start()
        started = time.monotonic()

        catch_up = timedelta(seconds=60)
        counts = export_core_journal(
            core.url, datetime.now(UTC), timedelta(minutes=15), tmp_path, catch_up, token=core.token
        )

    assert time.monotonic() - started >= 1.5, "the held-back transfer was not waited for"
    assert counts["core_journal_awaited"] == 0
    rows = read_rows(CORE_JOURNAL, tmp_path)
    ours = [r for r in rows if r["message_id"] == message_id]
    assert [(r["tenant_id"], r["transfer_id"], r["amount_cents"], r["currency"]) for r in ours] == [
        (tenant, transfer_id, 1234, "AUD")
    ]
    assert not any(r["tenant_id"] == "teller-7" for r in rows)


def test_a_transfer_still_held_back_after_the_catch_up_time_is_counted_as_awaited(
    core: CoreBank, tmp_path: Path
) -> None:
    tenant, message_id = "acme", str(uuid.uuid4())
    with OlderTransaction(core):
        transfer_id = asyncio.run(_book(core, f"{tenant}:{message_id}", 10))
        _remit_recorded(tmp_path, tenant, message_id, transfer_id)

        catch_up = timedelta(seconds=1)
        counts = export_core_journal(
            core.url, datetime.now(UTC), timedelta(minutes=15), tmp_path, catch_up, token=core.token
        )

    assert counts["core_journal_awaited"] == 1
    assert message_id not in [r["message_id"] for r in read_rows(CORE_JOURNAL, tmp_path)]


def test_a_transfer_the_core_never_booked_is_not_waited_for(core: CoreBank, tmp_path: Path) -> None:
    _remit_recorded(tmp_path, "acme", str(uuid.uuid4()), "424242")  # remit's record; the core has no such key
    started = time.monotonic()

    counts = export_core_journal(
        core.url, datetime.now(UTC), timedelta(minutes=15), tmp_path, timedelta(seconds=60), token=core.token
    )

    assert time.monotonic() - started < 30
    assert counts["core_journal_awaited"] == 0


def test_every_generation_of_a_key_is_the_same_payment() -> None:
    """app/consumer/core_keys.py's keys: generation 1 is `<tenant>:<message_id>`, a later one `...:<n>`."""
    message_id = str(uuid.uuid4())
    for generation in (None, 1, 2, 10):
        assert split_key(remit_key("acme", message_id, generation)) == ("acme", message_id)
    assert remit_key("acme", message_id, 1) == f"acme:{message_id}"
    assert remit_key("acme", message_id, 12) == f"acme:{message_id}:12"
    for foreign in (f"acme:{message_id}:1", f"acme:{message_id}:0", f"acme:{message_id}:02", f"acme:{message_id}:x"):
        assert split_key(foreign) is None, foreign  # never remit's spelling of a key


def test_a_payment_booked_under_a_later_key_generation_is_exported_and_waited_for(
    core: CoreBank, tmp_path: Path
) -> None:
    """A forced replay after the core refused the first key: the core holds the refusal under `<tenant>:<id>` and
    the booking under `<tenant>:<id>:2`, which the export keeps under the payment and waits for like any other."""
    tenant, message_id = "acme", str(uuid.uuid4())

    async def refuse_then_book() -> str:
        async with core.client(timeout=30) as client:
            a, closed = await open_account(client, 10**6), await open_account(client, status="closed")
            first = await client.post(
                "/transfers", json=transfer(a, closed, 500), headers={"Idempotency-Key": f"{tenant}:{message_id}"}
            )
            assert first.json()["status"] == "rejected", first.text
            await client.put(
                f"/accounts/{closed.bsb}/{closed.number}/{closed.currency}/status", json={"status": "open"}
            )
        return await _book_between(core, a, closed, f"{tenant}:{message_id}:2", 500)

    with OlderTransaction(core) as older:
        transfer_id = asyncio.run(refuse_then_book())
        _remit_recorded(tmp_path, tenant, message_id, transfer_id, generation=2)
        threading.Timer(2.0, older.end.set).start()
        started = time.monotonic()
        counts = export_core_journal(
            core.url, datetime.now(UTC), timedelta(minutes=15), tmp_path, timedelta(seconds=60), token=core.token
        )

    assert time.monotonic() - started >= 1.5, "the held-back transfer under the new key was not waited for"
    assert counts["core_journal_awaited"] == 0
    ours = [r for r in read_rows(CORE_JOURNAL, tmp_path) if r["message_id"] == message_id]
    assert [(r["tenant_id"], r["transfer_id"], r["amount_cents"]) for r in ours] == [(tenant, transfer_id, 500)]

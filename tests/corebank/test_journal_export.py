"""GET /journal: booked transfers in a stable order, paged from a cursor; a transaction still running holds
the export back, so a late commit never lands behind a cursor already handed out."""

import asyncio
import random
from typing import Any

import asyncpg
import httpx
import pytest

from corebank.export import _widen
from tests.utils.corebank import CoreBank, dsn, fresh_key, open_account, post_transfer, transfer
from tests.utils.services import PG_ADMIN_DSN

pytestmark = pytest.mark.integration

Rows = list[dict[str, Any]]


async def read_all(client: httpx.AsyncClient, after: str = "0.0", limit: int = 1000) -> tuple[Rows, str]:
    rows: Rows = []
    while True:
        page = (await client.get("/journal", params={"after": after, "limit": limit})).json()
        rows += page["transfers"]
        after = page["cursor"]
        if not page["has_more"]:
            return rows, after


async def test_the_export_pages_booked_transfers_in_a_stable_order(client: httpx.AsyncClient) -> None:
    a, b = await open_account(client, 10_000), await open_account(client)
    keys = [fresh_key() for _ in range(23)]
    for key in keys:
        await post_transfer(client, key, transfer(a, b, 10, reference=f"R-{key[-4:]}"))
    await post_transfer(client, fresh_key(), transfer(a, b, 10**6))  # rejected: not in the journal

    whole, _ = await read_all(client)
    paged, _ = await read_all(client, limit=5)

    assert paged == whole
    ours = [r for r in whole if r["idempotency_key"] in keys]
    assert [r["idempotency_key"] for r in ours] == keys
    assert len({r["transfer_id"] for r in whole}) == len(whole)
    first = ours[0]
    assert (first["amount_cents"], first["currency"], first["debtor_account"], first["creditor_account"]) == (
        10,
        "AUD",
        a.number,
        b.number,
    )
    assert first["reference"] == f"R-{keys[0][-4:]}"


async def test_an_empty_page_keeps_the_cursor(client: httpx.AsyncClient) -> None:
    _, end = await read_all(client)

    page = (await client.get("/journal", params={"after": end})).json()

    assert page == {"transfers": [], "cursor": end, "has_more": False}


async def test_a_running_transaction_holds_the_export_back_until_it_ends(
    client: httpx.AsyncClient, core: CoreBank
) -> None:
    a, b = await open_account(client, 1_000), await open_account(client)
    _, start = await read_all(client)
    older = await asyncpg.connect(dsn(core.database_url))
    try:
        transaction = older.transaction()
        await transaction.start()
        await older.fetchval("SELECT pg_current_xact_id()")  # an id older than the booking below
        key = fresh_key()
        await post_transfer(client, key, transfer(a, b, 10))

        while_running, cursor = await read_all(client, start)
        await transaction.rollback()
        after_it_ended, _ = await read_all(client, cursor)
    finally:
        await older.close()

    assert key not in {r["idempotency_key"] for r in while_running}
    assert key in {r["idempotency_key"] for r in after_it_ended}


async def test_a_running_transaction_on_another_database_does_not_hold_the_export_back(
    client: httpx.AsyncClient,
) -> None:
    a, b = await open_account(client, 1_000), await open_account(client)
    _, start = await read_all(client)
    elsewhere = await asyncpg.connect(PG_ADMIN_DSN)  # the server's `postgres` database, not the core's
    try:
        transaction = elsewhere.transaction()
        await transaction.start()
        await elsewhere.fetchval("SELECT pg_current_xact_id()")  # an id older than the booking below
        key = fresh_key()
        await post_transfer(client, key, transfer(a, b, 10))

        while_running, _ = await read_all(client, start)
        await transaction.rollback()
    finally:
        await elsewhere.close()

    assert key in {r["idempotency_key"] for r in while_running}


async def test_following_the_cursor_during_concurrent_booking_reads_every_transfer_once(
    client: httpx.AsyncClient,
) -> None:
    accounts = [await open_account(client, 10**9) for _ in range(6)]
    rng = random.Random(11)
    _, cursor = await read_all(client)
    booked: set[str] = set()
    done = asyncio.Event()

    async def booker() -> None:
        for _ in range(15):
            d, c = rng.sample(accounts, 2)
            batch = [{**transfer(d, c, 1), "idempotency_key": fresh_key()} for _ in range(rng.randint(1, 30))]
            results = (await client.post("/transfers/batch", json={"transfers": batch})).json()["results"]
            booked.update(r["idempotency_key"] for r in results if r["status"] == "booked")

    async def bookers() -> None:
        await asyncio.gather(*(booker() for _ in range(4)))
        done.set()

    seen: list[str] = []

    async def reader() -> None:
        nonlocal cursor
        while not done.is_set():
            rows, cursor = await read_all(client, cursor, limit=7)
            seen.extend(r["idempotency_key"] for r in rows)
            await asyncio.sleep(0.01)
        rows, cursor = await read_all(client, cursor, limit=7)
        seen.extend(r["idempotency_key"] for r in rows)

    await asyncio.gather(bookers(), reader())

    assert len(seen) == len(set(seen)), "a transfer was exported twice"
    assert set(seen) == booked, f"missed {len(booked - set(seen))}, extra {len(set(seen) - booked)}"


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"limit": 5000}, 200),
        ({"limit": 5001}, 422),
        ({"limit": 1}, 200),
        ({"limit": 0}, 422),
        ({"after": "abc"}, 422),
        ({"after": "1.2.3"}, 422),
        ({"after": "9223372036854775807.1"}, 200),
        ({"after": "9223372036854775808.1"}, 422),
    ],
)
async def test_page_size_and_cursor_are_checked(client: httpx.AsyncClient, params: dict[str, Any], status: int) -> None:
    response = await client.get("/journal", params=params)

    assert response.status_code == status
    if status == 422:
        assert response.json()["error"]["code"] in {"validation_failed", "bad_cursor"}


@pytest.mark.parametrize(
    ("xid32", "next_xid", "widened"),
    [
        (5, 2**32 + 10, 2**32 + 5),  # same epoch
        (2**32 - 3, 2**32 + 10, 2**32 - 3),  # started before the wraparound into this epoch
        (9, 10, 9),
    ],
)
def test_a_running_transactions_32_bit_id_is_widened_below_the_next_id(xid32: int, next_xid: int, widened: int) -> None:
    assert _widen(xid32, next_xid) == widened

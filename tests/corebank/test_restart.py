"""kill -9 the core in the middle of a run, start it again on the same database: every outcome it answered
is still there, every request in flight at the kill is resolved by the retry, and nothing is booked twice."""

import asyncio
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from tests.utils.corebank import (
    check_ledger,
    create_corebank_database,
    fresh_key,
    open_account,
    post_transfer,
    start_corebank,
    transfer,
    wait_ready,
)
from tests.utils.services import PG_ADMIN_DSN, drop_database

pytestmark = pytest.mark.integration

BATCHES, SIZE, SENDERS = 96, 25, 8
Results = dict[str, dict[str, Any]]


async def send_until_killed(
    client: httpx.AsyncClient, batches: list[list[dict[str, Any]]], kill: Any
) -> tuple[Results, list[str]]:
    """Send the batches from SENDERS clients; kill the core once a third is answered. Returns the answers and
    the keys that were in flight when the connection died."""
    answered: Results = {}
    in_flight: list[str] = []
    queue = list(batches)
    a_third = asyncio.Event()

    async def sender() -> None:
        while queue:
            batch = queue.pop(0)
            try:
                response = await client.post("/transfers/batch", json={"transfers": batch})
            except httpx.TransportError:
                in_flight.extend(t["idempotency_key"] for t in batch)
                return
            answered.update({r["idempotency_key"]: r for r in response.json()["results"]})
            if len(answered) >= BATCHES * SIZE // 3:
                a_third.set()

    async def killer() -> None:
        await a_third.wait()
        kill()

    await asyncio.gather(killer(), *(sender() for _ in range(SENDERS)))
    return answered, in_flight


async def test_kill_9_mid_run_loses_nothing_and_doubles_nothing(tmp_path: Path) -> None:
    database_url = await create_corebank_database()
    core = start_corebank(database_url, tmp_path / "before.log")
    try:
        await wait_ready(core)
        async with core.client(timeout=10) as client:
            accounts = [await open_account(client, 10**12) for _ in range(6)]
            # Committed batches wait 200 ms before answering, so the kill finds some committed and unanswered.
            await core.set_faults(answer_delay_ms=200)
            batches = [
                [
                    {**transfer(accounts[i % 6], accounts[(i + 1 + j % 5) % 6], 1 + j), "idempotency_key": fresh_key()}
                    for j in range(SIZE)
                ]
                for i in range(BATCHES)
            ]
            answered, in_flight = await send_until_killed(client, batches, core.process.kill)

        core = start_corebank(database_url, tmp_path / "after.log", port=core.process.port)
        await wait_ready(core)
        after: Results = {}
        async with core.client(timeout=30) as client:
            for batch in batches:
                response = await client.post("/transfers/batch", json={"transfers": batch})
                after.update({r["idempotency_key"]: r for r in response.json()["results"]})

        assert 0 < len(answered) < BATCHES * SIZE, "the kill must land in the middle of the run"
        for key, before in answered.items():
            assert (after[key]["transfer_id"], after[key]["replayed"]) == (before["transfer_id"], True)
        committed_unanswered = [k for k in in_flight if after[k]["replayed"]]
        assert committed_unanswered, "no batch was committed and unanswered at the kill"
        assert {r["status"] for r in after.values()} == {"booked"}
        ledger = await check_ledger(database_url)
        assert ledger.booked_keys == BATCHES * SIZE
        print(
            f"answered before the kill: {len(answered)} keys; in flight: {len(in_flight)}, "
            f"of which committed with the answer lost: {len(committed_unanswered)}; booked: {ledger.booked_keys}"
        )
    finally:
        core.process.stop()
        await drop_database(database_url)


async def test_losing_the_database_answers_503_and_books_once_it_is_back(tmp_path: Path) -> None:
    database_url = await create_corebank_database()
    name = database_url.rsplit("/", 1)[1]
    core = start_corebank(database_url, tmp_path / "core.log")
    admin = await asyncpg.connect(PG_ADMIN_DSN)
    try:
        await wait_ready(core)
        async with core.client(timeout=30) as client:
            debtor, creditor = await open_account(client, 1_000), await open_account(client)
            key, body = fresh_key(), transfer(debtor, creditor, 400)
            await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            await admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name)

            refused = await post_transfer(client, key, body)
            not_ready = await client.get("/readyz")
            await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
            booked = await post_transfer(client, key, body)
            again = await post_transfer(client, key, body)

        assert (refused.status_code, refused.json()["error"]["code"]) == (503, "unavailable")
        assert not_ready.status_code == 503
        assert (booked.status_code, again.status_code) == (201, 200)
        assert debtor.number not in core.process.log()
        ledger = await check_ledger(database_url)
        assert ledger.booked_keys == 1
    finally:
        await admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        await admin.close()
        core.process.stop()
        await drop_database(database_url)

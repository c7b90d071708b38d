"""Fault injection on the real process: the response lost after the commit, injected 5xx, added latency, an
outage for a period. What a client must do after each is shown here: ask for the key's status, then retry."""

import asyncio
import time

import httpx
import pytest

from tests.utils.corebank import (
    CoreBank,
    SetFaults,
    balance,
    check_ledger,
    fresh_key,
    open_account,
    post_transfer,
    transfer,
)

pytestmark = pytest.mark.integration


async def test_a_response_lost_after_the_commit_is_recovered_by_status_then_retry(
    client: httpx.AsyncClient, core: CoreBank, faults: SetFaults
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    key, body = fresh_key(), transfer(debtor, creditor, 400)
    await faults(drop_rate=1.0)

    with pytest.raises(httpx.RemoteProtocolError):
        await post_transfer(client, key, body)
    status = (await client.get(f"/transfers/{key}")).json()
    await faults()
    retry = await post_transfer(client, key, body)

    assert status["status"] == "booked"
    assert status["transfer_id"]
    assert retry.status_code == 200
    assert (retry.json()["transfer_id"], retry.json()["replayed"]) == (status["transfer_id"], True)
    assert (await balance(client, debtor), await balance(client, creditor)) == (600, 400)
    await check_ledger(core.database_url)


async def test_a_batch_response_lost_after_the_commit_is_answered_again_by_the_retry(
    client: httpx.AsyncClient, faults: SetFaults
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    batch = [{**transfer(debtor, creditor, 100), "idempotency_key": fresh_key()} for _ in range(5)]
    await faults(drop_rate=1.0)

    with pytest.raises(httpx.RemoteProtocolError):
        await client.post("/transfers/batch", json={"transfers": batch})
    await faults()
    statuses = await client.post("/transfers/status", json={"idempotency_keys": [t["idempotency_key"] for t in batch]})
    retry = await client.post("/transfers/batch", json={"transfers": batch})

    assert {r["status"] for r in statuses.json()["results"]} == {"booked"}
    assert [(r["status"], r["replayed"]) for r in retry.json()["results"]] == [("booked", True)] * 5
    assert (await balance(client, debtor), await balance(client, creditor)) == (500, 500)


async def test_a_lost_response_does_not_lose_refusals_either(client: httpx.AsyncClient, faults: SetFaults) -> None:
    debtor, creditor = await open_account(client, 10), await open_account(client)
    key, body = fresh_key(), transfer(debtor, creditor, 400)
    await faults(drop_rate=1.0)

    with pytest.raises(httpx.RemoteProtocolError):
        await post_transfer(client, key, body)

    assert (await client.get(f"/transfers/{key}")).json()["reason"] == "insufficient_funds"


async def test_an_injected_error_does_nothing(client: httpx.AsyncClient, faults: SetFaults) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    key = fresh_key()
    await faults(error_rate=1.0)

    response = await post_transfer(client, key, transfer(debtor, creditor, 400))
    await faults()

    assert (response.status_code, response.json()["error"]["code"]) == (500, "injected_error")
    assert (await client.get(f"/transfers/{key}")).json()["status"] == "unknown"
    assert await balance(client, debtor) == 1_000


async def test_a_seeded_error_share_repeats_itself(client: httpx.AsyncClient, faults: SetFaults) -> None:
    async def run() -> list[int]:
        await faults(error_rate=0.3, seed=42)
        return [(await client.get(f"/transfers/{fresh_key()}")).status_code for _ in range(60)]

    first, second = await run(), await run()

    assert first == second
    assert 8 <= first.count(500) <= 30, first.count(500)
    assert set(first) == {200, 500}


async def test_added_latency_delays_every_api_request(client: httpx.AsyncClient, faults: SetFaults) -> None:
    await faults(latency_ms=400)

    started = time.monotonic()
    response = await client.get(f"/transfers/{fresh_key()}")

    assert response.status_code == 200
    assert time.monotonic() - started >= 0.4


async def test_down_refuses_everything_for_the_period_then_recovers(
    client: httpx.AsyncClient, faults: SetFaults, core: CoreBank
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    key = fresh_key()
    await faults(down_seconds=1.5)

    refused = await post_transfer(client, key, transfer(debtor, creditor, 400))
    ready = await client.get("/readyz")
    alive = await client.get("/healthz")
    left = (await client.get("/_faults", headers=core.fault_headers)).json()["down_seconds"]
    await asyncio.sleep(1.6)
    after = await post_transfer(client, key, transfer(debtor, creditor, 400))

    assert (refused.status_code, refused.json()["error"]["code"]) == (503, "unavailable")
    assert refused.headers["Retry-After"] in {"1", "2"}
    assert ready.status_code == 503
    assert alive.status_code == 200
    assert 0 < left <= 1.5
    assert after.status_code == 201
    assert await balance(client, debtor) == 600


async def test_an_unknown_fault_is_refused(client: httpx.AsyncClient, core: CoreBank) -> None:
    response = await client.put("/_faults", json={"explode": True}, headers=core.fault_headers)

    assert (response.status_code, response.json()["error"]["code"]) == (422, "validation_failed")


async def test_a_held_account_is_answered_in_progress_n_times_per_key_then_booked(
    client: httpx.AsyncClient, core: CoreBank, faults: SetFaults
) -> None:
    debtor, creditor, other = await open_account(client, 1_000), await open_account(client), await open_account(client)
    held = {**transfer(debtor, creditor, 100), "idempotency_key": fresh_key()}
    free = {**transfer(debtor, other, 200), "idempotency_key": fresh_key()}
    single_key, single = fresh_key(), transfer(debtor, creditor, 300)
    await faults(held_accounts={creditor.number: 2})

    answers = [(await client.post("/transfers/batch", json={"transfers": [held, free]})).json() for _ in range(3)]
    singles = [(await post_transfer(client, single_key, single)).status_code]
    status_while_held = (await client.get(f"/transfers/{single_key}")).json()["status"]
    singles += [(await post_transfer(client, single_key, single)).status_code for _ in range(2)]

    statuses = [[(r["status"], r["conflict"], r["replayed"]) for r in a["results"]] for a in answers]
    assert statuses == [
        [("conflict", "in_progress", False), ("booked", None, False)],
        [("conflict", "in_progress", False), ("booked", None, True)],
        [("booked", None, False), ("booked", None, True)],
    ]
    assert status_while_held == "unknown"  # nothing is recorded for a held transfer
    assert singles == [409, 409, 201]
    assert (await balance(client, creditor), await balance(client, other)) == (400, 200)
    await check_ledger(core.database_url)

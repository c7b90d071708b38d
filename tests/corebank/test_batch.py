"""POST /transfers/batch and POST /transfers/status: many transfers per request, each with its own key and its
own result; the limit; concurrent batches over the same accounts in opposite directions."""

import asyncio
import random
from typing import Any

import httpx
import pytest

from tests.utils.corebank import (
    CoreBank,
    SetFaults,
    balance,
    check_ledger,
    fresh_account,
    fresh_key,
    open_account,
    post_transfer,
    transfer,
)

pytestmark = pytest.mark.integration


def item(key: str, body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "idempotency_key": key}


def summary(result: dict[str, Any]) -> tuple[str, str | None, str | None]:
    return result["status"], result["reason"] or result["conflict"], result["party"]


async def test_a_batch_answers_each_transfer_with_its_own_result(client: httpx.AsyncClient, faults: SetFaults) -> None:
    rich, poor, payee = await open_account(client, 10_000), await open_account(client, 5), await open_account(client)
    closed = await open_account(client, status="closed")
    replayed_key, reused_key, running_key = fresh_key(), fresh_key(), fresh_key()
    first = await post_transfer(client, replayed_key, transfer(rich, payee, 100))
    await post_transfer(client, reused_key, transfer(rich, payee, 200))
    await faults(commit_delay_ms=2_000)
    running = asyncio.create_task(post_transfer(client, running_key, transfer(rich, payee, 300)))
    await asyncio.sleep(0.5)

    batch = [
        item(fresh_key(), transfer(rich, payee, 1_000)),
        item(replayed_key, transfer(rich, payee, 100)),
        item(reused_key, transfer(rich, payee, 201)),
        item(running_key, transfer(rich, payee, 300)),
        item(fresh_key(), transfer(poor, payee, 6)),
        item(fresh_key(), transfer(rich, closed, 1)),
        item(fresh_key(), transfer(rich, fresh_account(), 1)),
        item(fresh_key(), transfer(rich, payee, 1, currency="EUR")),
    ]
    response = await client.post("/transfers/batch", json={"transfers": batch})
    await running

    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["idempotency_key"] for r in results] == [t["idempotency_key"] for t in batch]
    assert [summary(r) for r in results] == [
        ("booked", None, None),
        ("booked", None, None),
        ("conflict", "request_mismatch", None),
        ("conflict", "in_progress", None),
        ("rejected", "insufficient_funds", "debtor"),
        ("rejected", "account_closed", "creditor"),
        ("rejected", "unknown_account", "creditor"),
        ("rejected", "currency_not_held", "debtor"),
    ]
    assert [r["replayed"] for r in results] == [False, True, False, False, False, False, False, False]
    assert results[1]["transfer_id"] == first.json()["transfer_id"]
    assert await balance(client, rich) == 10_000 - 100 - 200 - 300 - 1_000
    assert await balance(client, payee) == 100 + 200 + 300 + 1_000


async def test_a_batch_is_decided_in_order_against_running_balances(client: httpx.AsyncClient) -> None:
    a, b = await open_account(client, 100), await open_account(client)
    batch = [
        item(fresh_key(), transfer(a, b, 60)),
        item(fresh_key(), transfer(a, b, 60)),
        item(fresh_key(), transfer(b, a, 60)),
        item(fresh_key(), transfer(a, b, 100)),
    ]

    results = (await client.post("/transfers/batch", json={"transfers": batch})).json()["results"]

    assert [(r["status"], r["reason"]) for r in results] == [
        ("booked", None),
        ("rejected", "insufficient_funds"),
        ("booked", None),
        ("booked", None),
    ]
    assert (await balance(client, a), await balance(client, b)) == (0, 100)


async def test_a_key_twice_in_one_batch_refuses_the_batch(client: httpx.AsyncClient) -> None:
    a, b = await open_account(client, 100), await open_account(client)
    key = fresh_key()

    response = await client.post(
        "/transfers/batch", json={"transfers": [item(key, transfer(a, b, 1)), item(key, transfer(a, b, 1))]}
    )

    assert (response.status_code, response.json()["error"]["code"]) == (422, "validation_failed")
    assert (await client.get(f"/transfers/{key}")).json()["status"] == "unknown"
    assert await balance(client, a) == 100


async def test_one_invalid_transfer_refuses_the_whole_batch(client: httpx.AsyncClient) -> None:
    a, b = await open_account(client, 100), await open_account(client)
    good = item(fresh_key(), transfer(a, b, 1))

    response = await client.post("/transfers/batch", json={"transfers": [good, item(fresh_key(), transfer(a, b, 0))]})

    assert response.status_code == 422
    assert response.json()["error"]["details"][0]["location"].startswith("body.transfers.1")
    assert (await client.get(f"/transfers/{good['idempotency_key']}")).json()["status"] == "unknown"


@pytest.mark.parametrize(("size", "status"), [(999, 200), (1000, 200), (1001, 422)])
async def test_a_batch_holds_at_most_1000_transfers(client: httpx.AsyncClient, size: int, status: int) -> None:
    a, b = await open_account(client, 10**9), await open_account(client)
    batch = [item(fresh_key(), transfer(a, b, 1)) for _ in range(size)]

    response = await client.post("/transfers/batch", json={"transfers": batch})

    assert response.status_code == status
    if status == 200:
        assert {r["status"] for r in response.json()["results"]} == {"booked"}
        assert await balance(client, b) == size
    else:
        assert response.json()["error"]["code"] == "batch_too_large"
        assert await balance(client, b) == 0


async def test_an_empty_batch_is_invalid(client: httpx.AsyncClient) -> None:
    response = await client.post("/transfers/batch", json={"transfers": []})

    assert (response.status_code, response.json()["error"]["code"]) == (422, "validation_failed")


async def test_the_status_of_many_keys_at_once(client: httpx.AsyncClient) -> None:
    a, b = await open_account(client, 100), await open_account(client)
    booked, rejected, never = fresh_key(), fresh_key(), fresh_key()
    booked_id = (await post_transfer(client, booked, transfer(a, b, 10))).json()["transfer_id"]
    await post_transfer(client, rejected, transfer(a, b, 1_000))

    response = await client.post("/transfers/status", json={"idempotency_keys": [never, booked, rejected]})

    results = response.json()["results"]
    assert [(r["idempotency_key"], r["status"]) for r in results] == [
        (never, "unknown"),
        (booked, "booked"),
        (rejected, "rejected"),
    ]
    assert results[1]["transfer_id"] == booked_id
    assert (results[2]["reason"], results[2]["iso_reason"]) == ("insufficient_funds", "AM04")


@pytest.mark.parametrize(("size", "status"), [(1000, 200), (1001, 422)])
async def test_a_status_request_holds_at_most_1000_keys(client: httpx.AsyncClient, size: int, status: int) -> None:
    response = await client.post("/transfers/status", json={"idempotency_keys": [fresh_key() for _ in range(size)]})

    assert response.status_code == status


async def test_concurrent_batches_in_opposite_directions_never_deadlock(
    client: httpx.AsyncClient, core: CoreBank
) -> None:
    accounts = [await open_account(client, 1_000_000) for _ in range(4)]
    rng = random.Random(7)

    def crossing_batch() -> list[dict[str, Any]]:
        pairs = [rng.sample(accounts, 2) for _ in range(40)]
        return [item(fresh_key(), transfer(d, c, rng.randint(1, 100))) for d, c in pairs]

    batches = [crossing_batch() for _ in range(16)]
    responses = await asyncio.gather(*(client.post("/transfers/batch", json={"transfers": b}) for b in batches))

    assert [r.status_code for r in responses] == [200] * 16
    assert all(r["status"] == "booked" for resp in responses for r in resp.json()["results"])
    assert sum([await balance(client, a) for a in accounts]) == 4_000_000
    await check_ledger(core.database_url)

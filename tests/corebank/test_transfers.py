"""POST /transfers on the real process: booking, each refusal, idempotency (same key, other body, two requests
at once), and the journal's append-only rule enforced by PostgreSQL."""

import asyncio
from typing import Any

import asyncpg
import httpx
import pytest

from tests.utils.corebank import (
    Acct,
    CoreBank,
    SetFaults,
    balance,
    check_ledger,
    dsn,
    fresh_account,
    fresh_key,
    open_account,
    post_transfer,
    transfer,
)

pytestmark = pytest.mark.integration


async def postings(core: CoreBank, key: str) -> list[tuple[str, str, int, str]]:
    conn = await asyncpg.connect(dsn(core.database_url))
    try:
        rows = await conn.fetch(
            """
            SELECT j.side, a.account_number, j.amount_cents, j.currency
            FROM journal j JOIN transfers t USING (transfer_id) JOIN accounts a USING (account_id)
            WHERE t.idempotency_key = $1 ORDER BY j.side DESC
            """,
            key,
        )
    finally:
        await conn.close()
    return [tuple(r) for r in rows]


async def test_a_transfer_debits_the_debtor_and_credits_the_creditor(client: httpx.AsyncClient, core: CoreBank) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client, 50)
    key = fresh_key()

    response = await post_transfer(client, key, transfer(debtor, creditor, 300, reference="INV-1"))

    assert response.status_code == 201
    result = response.json()
    assert result["status"] == "booked"
    assert result["replayed"] is False
    assert result["transfer_id"]
    assert (await balance(client, debtor), await balance(client, creditor)) == (700, 350)
    assert await postings(core, key) == [("debit", debtor.number, 300, "AUD"), ("credit", creditor.number, 300, "AUD")]
    status = (await client.get(f"/transfers/{key}")).json()
    assert (status["status"], status["transfer_id"]) == ("booked", result["transfer_id"])


@pytest.mark.parametrize(("opening", "amount", "booked"), [(500, 499, True), (500, 500, True), (500, 501, False)])
async def test_funds_are_enough_up_to_the_balance_and_not_a_cent_more(
    client: httpx.AsyncClient, opening: int, amount: int, booked: bool
) -> None:
    debtor, creditor = await open_account(client, opening), await open_account(client)

    result = (await post_transfer(client, fresh_key(), transfer(debtor, creditor, amount))).json()

    if booked:
        assert result["status"] == "booked"
        assert await balance(client, debtor) == opening - amount
    else:
        assert (result["status"], result["reason"], result["iso_reason"], result["party"]) == (
            "rejected",
            "insufficient_funds",
            "AM04",
            "debtor",
        )
        assert (await balance(client, debtor), await balance(client, creditor)) == (opening, 0)


async def _refusal(client: httpx.AsyncClient, body: dict[str, Any]) -> tuple[int, str, str, str, str]:
    response = await post_transfer(client, fresh_key(), body)
    r = response.json()
    return response.status_code, r["status"], r["reason"], r["iso_reason"], r["party"]


async def test_unknown_accounts_are_refused_for_either_party(client: httpx.AsyncClient) -> None:
    known = await open_account(client, 1_000)
    nobody = fresh_account()

    assert await _refusal(client, transfer(nobody, known, 10)) == (201, "rejected", "unknown_account", "AC01", "debtor")
    assert await _refusal(client, transfer(known, nobody, 10)) == (
        201,
        "rejected",
        "unknown_account",
        "AC01",
        "creditor",
    )
    assert await balance(client, known) == 1_000


async def test_closed_accounts_are_refused_for_either_party(client: httpx.AsyncClient) -> None:
    open_one = await open_account(client, 1_000)
    closed = await open_account(client, 1_000, status="closed")

    assert await _refusal(client, transfer(closed, open_one, 10)) == (
        201,
        "rejected",
        "account_closed",
        "AC04",
        "debtor",
    )
    assert await _refusal(client, transfer(open_one, closed, 10)) == (
        201,
        "rejected",
        "account_closed",
        "AC04",
        "creditor",
    )
    assert (await balance(client, open_one), await balance(client, closed)) == (1_000, 1_000)


async def test_a_currency_the_account_does_not_hold_is_refused(client: httpx.AsyncClient) -> None:
    aud_only = await open_account(client, 1_000)
    both = await open_account(client, 1_000)
    await open_account(client, 1_000, currency="USD", like=both)

    from_aud_only = transfer(aud_only, both, 10, currency="USD")
    to_aud_only = transfer(Acct(both.bsb, both.number, "USD"), aud_only, 10)

    assert await _refusal(client, from_aud_only) == (201, "rejected", "currency_not_held", "AM03", "debtor")
    assert await _refusal(client, to_aud_only) == (201, "rejected", "currency_not_held", "AM03", "creditor")


async def test_closing_and_reopening_an_account(client: httpx.AsyncClient) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    path = f"/accounts/{creditor.bsb}/{creditor.number}/AUD/status"

    assert (await client.put(path, json={"status": "closed"})).json()["status"] == "closed"
    assert (await post_transfer(client, fresh_key(), transfer(debtor, creditor, 5))).json()[
        "reason"
    ] == "account_closed"
    assert (await client.put(path, json={"status": "open"})).json()["status"] == "open"
    assert (await post_transfer(client, fresh_key(), transfer(debtor, creditor, 5))).json()["status"] == "booked"
    assert (await client.put(f"/accounts/{fresh_account().bsb}/123456/AUD/status", json={"status": "closed"})).json()[
        "error"
    ]["code"] == "account_not_found"


async def test_opening_an_account_twice_is_a_conflict(client: httpx.AsyncClient) -> None:
    acct = await open_account(client, 10)
    again = {"bsb": acct.bsb, "account_number": acct.number, "currency": "AUD", "opening_balance_cents": 99}

    response = await client.post("/accounts", json=again)

    assert (response.status_code, response.json()["error"]["code"]) == (409, "account_exists")
    assert acct.number not in response.text
    assert await balance(client, acct) == 10


async def test_the_same_key_and_request_answer_the_first_outcome_and_move_money_once(
    client: httpx.AsyncClient, core: CoreBank
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    key, body = fresh_key(), transfer(debtor, creditor, 400)

    first = await post_transfer(client, key, body)
    again = [await post_transfer(client, key, body) for _ in range(3)]

    assert first.status_code == 201
    for response in again:
        assert response.status_code == 200
        assert response.json() == {**first.json(), "replayed": True}
    assert (await balance(client, debtor), await balance(client, creditor)) == (600, 400)
    assert len(await postings(core, key)) == 2


async def test_a_rejection_is_the_key_outcome_for_good(client: httpx.AsyncClient) -> None:
    """The same key and request answer the original rejection, even after the reason went away."""
    debtor, creditor, rich = (
        await open_account(client, 100),
        await open_account(client),
        await open_account(client, 500),
    )
    key, body = fresh_key(), transfer(debtor, creditor, 150)
    assert (await post_transfer(client, key, body)).json()["reason"] == "insufficient_funds"
    await post_transfer(client, fresh_key(), transfer(rich, debtor, 500))

    again = await post_transfer(client, key, body)

    assert again.status_code == 200
    assert (again.json()["status"], again.json()["reason"], again.json()["replayed"]) == (
        "rejected",
        "insufficient_funds",
        True,
    )


@pytest.mark.parametrize(
    "change",
    [{"amount_cents": 401}, {"currency": "USD"}, {"creditor_account": "999999"}, {"reference": "other"}],
    ids=["amount", "currency", "creditor", "reference"],
)
async def test_the_same_key_with_another_request_is_refused(
    client: httpx.AsyncClient, core: CoreBank, change: dict[str, Any]
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    key, body = fresh_key(), transfer(debtor, creditor, 400, reference="INV-7")
    await post_transfer(client, key, body)

    response = await post_transfer(client, key, {**body, **change})

    assert (response.status_code, response.json()["error"]["code"]) == (422, "idempotency_key_reused")
    assert (await balance(client, debtor), await balance(client, creditor)) == (600, 400)
    assert len(await postings(core, key)) == 2


async def test_a_key_whose_first_request_is_still_running_answers_409(
    client: httpx.AsyncClient, core: CoreBank, faults: SetFaults
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    key, body = fresh_key(), transfer(debtor, creditor, 250)
    await faults(commit_delay_ms=1_500)

    first = asyncio.create_task(post_transfer(client, key, body))
    await asyncio.sleep(0.5)
    second = await post_transfer(client, key, body)
    running = (await client.get(f"/transfers/{key}")).json()["status"]
    first_response = await first

    assert (second.status_code, second.json()["error"]["code"]) == (409, "idempotency_key_in_progress")
    assert running == "in_progress"
    assert first_response.status_code == 201
    assert (await balance(client, debtor), await balance(client, creditor)) == (750, 250)
    assert len(await postings(core, key)) == 2


async def test_many_requests_at_once_with_one_key_make_exactly_one_transfer(
    client: httpx.AsyncClient, core: CoreBank
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    key, body = fresh_key(), transfer(debtor, creditor, 100)

    responses = await asyncio.gather(*(post_transfer(client, key, body) for _ in range(12)))

    codes = sorted(r.status_code for r in responses)
    assert codes.count(201) == 1, codes
    assert set(codes) <= {200, 201, 409}, codes
    ids = {r.json()["transfer_id"] for r in responses if r.status_code in (200, 201)}
    assert len(ids) == 1
    assert (await balance(client, debtor), await balance(client, creditor)) == (900, 100)
    assert len(await postings(core, key)) == 2


@pytest.mark.parametrize(
    "change",
    [
        {"amount_cents": 0},
        {"amount_cents": -5},
        {"amount_cents": 1.5},
        {"amount_cents": "100"},
        {"amount_cents": True},
        {"amount_cents": 10**15 + 1},
        {"currency": "aud"},
        {"debtor_bsb": "012345"},
        {"creditor_account": "12345"},
        {"unexpected": 1},
    ],
)
async def test_invalid_requests_are_refused_without_echoing_accounts(
    client: httpx.AsyncClient, change: dict[str, Any]
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)

    response = await post_transfer(client, fresh_key(), {**transfer(debtor, creditor, 10), **change})

    assert (response.status_code, response.json()["error"]["code"]) == (422, "validation_failed")
    assert response.json()["error"]["details"]
    assert debtor.number not in response.text
    assert creditor.number not in response.text
    assert await balance(client, debtor) == 1_000


async def test_a_transfer_to_the_same_account_is_invalid(client: httpx.AsyncClient) -> None:
    acct = await open_account(client, 1_000)

    response = await post_transfer(client, fresh_key(), transfer(acct, acct, 10))

    assert (response.status_code, response.json()["error"]["code"]) == (422, "validation_failed")


@pytest.mark.parametrize(
    ("key", "status"),
    [
        (fresh_key().ljust(254, "k"), 201),
        (fresh_key().ljust(255, "k"), 201),
        (fresh_key().ljust(256, "k"), 422),
        ("", 422),
        ("a/b", 422),
        ("a b", 422),
        ("a%2Fb", 422),
    ],
    ids=["254", "255", "256", "empty", "slash", "space", "percent"],
)
async def test_keys_are_up_to_255_path_safe_characters(client: httpx.AsyncClient, key: str, status: int) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)

    response = await post_transfer(client, key, transfer(debtor, creditor, 10))

    assert response.status_code == status, response.text
    if status == 201:
        assert (await client.get(f"/transfers/{key}")).json()["status"] == "booked"


async def test_a_missing_key_is_invalid(client: httpx.AsyncClient) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)

    response = await client.post("/transfers", json=transfer(debtor, creditor, 10))

    assert response.status_code == 422
    assert response.json()["error"]["details"][0]["location"] == "header.Idempotency-Key"


@pytest.mark.parametrize("table", ["transfers", "journal"])
@pytest.mark.parametrize(
    "statement",
    ["UPDATE {table} SET amount_cents = amount_cents + 1", "DELETE FROM {table}", "TRUNCATE {table} CASCADE"],
    ids=["update", "delete", "truncate"],
)
async def test_postgresql_refuses_to_change_the_journal(
    client: httpx.AsyncClient, core: CoreBank, table: str, statement: str
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    key = fresh_key()
    await post_transfer(client, key, transfer(debtor, creditor, 10))
    before = await postings(core, key)

    conn = await asyncpg.connect(dsn(core.database_url))  # the owner, a superuser: the trigger still refuses
    try:
        with pytest.raises(asyncpg.InsufficientPrivilegeError, match="append-only"):
            await conn.execute(statement.format(table=table))
    finally:
        await conn.close()

    assert await postings(core, key) == before
    await check_ledger(core.database_url)

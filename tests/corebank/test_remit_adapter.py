"""remit's HTTP adapter against the reference core as a real process: booked, refused, invalid, and every way an
answer can be lost (dropped after the commit, too late, 5xx, the core down or killed). An unknown outcome is
resolved by asking the core, and a retry after any of them books each payment at most once."""

from pathlib import Path

import asyncpg
import httpx
import pytest
from pydantic import SecretStr

from app.consumer.breaker import CircuitBreaker
from app.consumer.core_banking import Booked, CoreOutcome
from app.consumer.core_http import HttpCoreBanking, core_client, core_ready
from app.consumer.core_keys import transfer_key
from app.errors import (
    AccountClosed,
    CoreBankingUnavailable,
    CoreOutcomeUnknown,
    CurrencyNotHeld,
    InsufficientFunds,
    InvalidMessage,
    MessageFailure,
    RetryableError,
    TransferInProgress,
    TransferKeyConflict,
    UnknownAccount,
)
from app.settings import Settings
from contracts import PaymentMessage
from tests.utils.core_adapter import Watching, kinds, payment
from tests.utils.corebank import (
    CoreBank,
    SetFaults,
    balance,
    check_ledger,
    create_corebank_database,
    dsn,
    fresh_account,
    open_account,
    start_corebank,
    wait_ready,
)
from tests.utils.factories import new_tenant_id
from tests.utils.services import drop_database, eventually

pytestmark = pytest.mark.integration

READ_TIMEOUT = 0.5


@pytest.fixture
def adapter(core: CoreBank, watching: Watching) -> HttpCoreBanking:
    return watching(core, threshold=1000, read_timeout=READ_TIMEOUT).adapter


def key_of(p: PaymentMessage) -> str:
    return transfer_key(p.tenant_id, p.message_id)


async def statuses(client: httpx.AsyncClient, payments: list[PaymentMessage]) -> list[tuple[str, str | None]]:
    response = await client.post("/transfers/status", json={"idempotency_keys": [key_of(p) for p in payments]})
    return [(r["status"], r["transfer_id"]) for r in response.json()["results"]]


async def transfers_recorded(core: CoreBank, payments: list[PaymentMessage]) -> dict[str, int]:
    """Per key: how many journal postings the core holds (a booked transfer is exactly two)."""
    conn = await asyncpg.connect(dsn(core.database_url))
    try:
        rows = await conn.fetch(
            "SELECT t.idempotency_key, count(j.*) AS postings FROM transfers t LEFT JOIN journal j USING (transfer_id)"
            " WHERE t.idempotency_key = ANY($1::text[]) GROUP BY t.idempotency_key",
            [key_of(p) for p in payments],
        )
    finally:
        await conn.close()
    return {r["idempotency_key"]: r["postings"] for r in rows}


def transfer_ids(outcomes: list[CoreOutcome]) -> list[str]:
    return [str(o.transfer_id) for o in outcomes if isinstance(o, Booked)]


async def test_a_payment_is_booked_under_its_key(
    adapter: HttpCoreBanking, client: httpx.AsyncClient, core: CoreBank
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    p = payment(debtor, creditor, 400)

    [outcome] = await adapter.book([p])

    assert isinstance(outcome, Booked)
    assert outcome.replayed is False
    assert await statuses(client, [p]) == [("booked", outcome.transfer_id)]
    assert (await balance(client, debtor), await balance(client, creditor)) == (600, 400)
    assert await transfers_recorded(core, [p]) == {f"{p.tenant_id}:{p.message_id}": 2}


async def test_a_batch_with_mixed_results_is_answered_in_order(
    adapter: HttpCoreBanking, client: httpx.AsyncClient
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    closed = await open_account(client, status="closed")
    usd_debtor = await open_account(client, 1_000, currency="USD")
    payments = [
        payment(debtor, creditor, 100),
        payment(debtor, closed, 100),
        payment(debtor, fresh_account(), 100),
        payment(debtor, creditor, 901),  # 900 left after the first
        payment(usd_debtor, creditor, 100),  # in USD: the creditor holds AUD only
        payment(debtor, creditor, 900),  # exactly the balance left: enough
    ]

    outcomes = await adapter.book(payments)

    assert kinds(outcomes) == [Booked, AccountClosed, UnknownAccount, InsufficientFunds, CurrencyNotHeld, Booked]
    refusals = [o for o in outcomes if isinstance(o, MessageFailure)]
    assert [(e.reason, e.retryable) for e in refusals] == [
        ("account_closed", False),
        ("unknown_account", False),
        ("insufficient_funds", False),
        ("currency_not_held", False),
    ]
    assert [str(e).split(": ", 1)[1] for e in refusals] == [
        "the creditor account is closed in this currency (AC04)",
        "core banking has no creditor account with this BSB and number (AC01)",
        "the debtor account's balance is below the amount (AM04)",
        "the creditor account does not hold this currency (AM03)",
    ]
    assert (await balance(client, debtor), await balance(client, creditor)) == (0, 1_000)


async def test_a_transfer_the_core_finds_invalid_is_permanent_and_the_others_are_booked(
    adapter: HttpCoreBanking, client: httpx.AsyncClient
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    payments = [payment(debtor, creditor, 100), payment(debtor, debtor, 100), payment(debtor, creditor, 200)]

    outcomes = await adapter.book(payments)

    assert kinds(outcomes) == [Booked, InvalidMessage, Booked]
    assert "same account" in str(outcomes[1])
    assert await balance(client, creditor) == 300


async def test_a_repeated_payment_is_sent_once_and_a_different_one_under_its_key_is_a_conflict(
    adapter: HttpCoreBanking, client: httpx.AsyncClient
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    first = payment(debtor, creditor, 100)
    altered = first.model_copy(update={"amount_cents": 101})

    outcomes = await adapter.book([first, first, altered])
    later = await adapter.book([altered])

    assert kinds(outcomes) == [Booked, Booked, TransferKeyConflict]
    assert outcomes[0] == outcomes[1]
    [conflict] = later  # the core's own answer this time: request_mismatch
    assert isinstance(conflict, TransferKeyConflict)
    assert (conflict.reason, conflict.retryable) == ("core_key_conflict", False)
    assert await balance(client, creditor) == 100


async def test_two_tenants_with_the_same_message_id_are_two_transfers(
    adapter: HttpCoreBanking, client: httpx.AsyncClient
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    ours = payment(debtor, creditor, 100)
    theirs = ours.model_copy(update={"tenant_id": new_tenant_id()})

    outcomes = await adapter.book([ours, theirs])

    assert kinds(outcomes) == [Booked, Booked]
    assert len(set(transfer_ids(outcomes))) == 2
    assert await balance(client, creditor) == 200


async def test_a_group_larger_than_the_batch_size_is_sent_in_chunks_in_order(
    core: CoreBank, client: httpx.AsyncClient, watching: Watching
) -> None:
    watched = watching(core, threshold=1000, read_timeout=READ_TIMEOUT, batch_max=3)
    debtor, creditor = await open_account(client, 700), await open_account(client)
    # Seven payments of 100 from 700: only the request's order books all seven.
    payments = [payment(debtor, creditor, 100) for _ in range(7)]

    outcomes = await watched.adapter.book(payments)

    assert kinds(outcomes) == [Booked] * 7
    assert watched.requests == ["/transfers/batch"] * 3
    ids = [int(i) for i in transfer_ids(outcomes)]
    assert ids == sorted(ids)
    assert await balance(client, debtor) == 0


async def test_a_batch_size_above_the_cores_limit_books_nothing_and_leaves_every_payment_retryable(
    core: CoreBank, client: httpx.AsyncClient, watching: Watching
) -> None:
    # The reference core takes at most 1000 transfers per batch (COREBANK_BATCH_MAX); remit is misconfigured.
    watched = watching(core, threshold=1000, read_timeout=READ_TIMEOUT, batch_max=1001)
    debtor, creditor = await open_account(client, 10_000), await open_account(client)
    payments = [payment(debtor, creditor, 1) for _ in range(1001)]

    outcomes = await watched.adapter.book(payments)

    assert {type(o) for o in outcomes} == {RetryableError}
    assert "batch_too_large" in str(outcomes[0])
    assert watched.requests == ["/transfers/batch"]
    assert await balance(client, creditor) == 0


async def test_a_lost_answer_is_resolved_by_status_and_the_retry_books_nothing_again(
    adapter: HttpCoreBanking, client: httpx.AsyncClient, core: CoreBank, faults: SetFaults
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    closed = await open_account(client, status="closed")
    payments = [payment(debtor, creditor, 100) for _ in range(4)] + [payment(debtor, closed, 100)]
    await faults(drop_rate=1.0)

    lost = await adapter.book(payments)
    await faults()
    retried = await adapter.book(payments)

    assert kinds(lost) == [Booked] * 4 + [AccountClosed]
    assert all(o.replayed for o in lost if isinstance(o, Booked))
    assert [(s, t) for s, t in await statuses(client, payments)][:4] == [("booked", t) for t in transfer_ids(lost)]
    assert kinds(retried) == kinds(lost)
    assert transfer_ids(retried) == transfer_ids(lost)
    assert (await balance(client, debtor), await balance(client, creditor)) == (600, 400)
    assert await transfers_recorded(core, payments) == {key_of(p): 2 for p in payments[:4]} | {key_of(payments[4]): 0}
    await check_ledger(core.database_url)


async def test_an_answer_later_than_the_read_timeout_is_resolved_by_status(
    adapter: HttpCoreBanking, client: httpx.AsyncClient, core: CoreBank, faults: SetFaults
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    payments = [payment(debtor, creditor, 100) for _ in range(3)]
    await faults(answer_delay_ms=int(READ_TIMEOUT * 1000) + 1_000)

    late = await adapter.book(payments)
    await faults()
    retried = await adapter.book(payments)

    assert kinds(late) == [Booked] * 3
    assert all(o.replayed for o in late if isinstance(o, Booked))
    assert transfer_ids(retried) == transfer_ids(late)
    assert await balance(client, creditor) == 300
    assert await transfers_recorded(core, payments) == {key_of(p): 2 for p in payments}
    await check_ledger(core.database_url)


async def test_a_transfer_still_being_booked_is_retryable_and_its_retry_books_it_once(
    adapter: HttpCoreBanking, client: httpx.AsyncClient, core: CoreBank, faults: SetFaults
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    p = payment(debtor, creditor, 100)
    await faults(commit_delay_ms=int(READ_TIMEOUT * 1000) + 1_500)

    [pending] = await adapter.book([p])
    await faults()

    async def committed() -> bool:
        return (await statuses(client, [p]))[0][0] == "booked"

    await eventually(committed, timeout=10, poll=0.1)
    [retried] = await adapter.book([p])

    assert isinstance(pending, TransferInProgress)
    assert pending.retryable
    assert isinstance(retried, Booked)
    assert retried.replayed
    assert await balance(client, creditor) == 100
    assert await transfers_recorded(core, [p]) == {key_of(p): 2}


async def test_a_5xx_that_did_nothing_is_found_unknown_and_retryable(
    adapter: HttpCoreBanking, client: httpx.AsyncClient, faults: SetFaults
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    p = payment(debtor, creditor, 100)
    # Seed 3's first two draws are below and above 0.5: the booking gets the injected 500, the status query not.
    await faults(error_rate=0.5, seed=3)

    [failed] = await adapter.book([p])
    await faults()
    [retried] = await adapter.book([p])

    assert isinstance(failed, CoreBankingUnavailable)
    assert "no record" in str(failed)
    assert isinstance(retried, Booked)
    assert retried.replayed is False
    assert await balance(client, creditor) == 100


async def test_when_the_status_query_fails_too_the_outcome_stays_unknown_and_retryable(
    adapter: HttpCoreBanking, client: httpx.AsyncClient, faults: SetFaults
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    payments = [payment(debtor, creditor, 100) for _ in range(2)]
    await faults(error_rate=1.0)

    failed = await adapter.book(payments)
    await faults()
    retried = await adapter.book(payments)

    assert kinds(failed) == [CoreOutcomeUnknown] * 2
    assert all(o.retryable for o in failed if isinstance(o, MessageFailure))
    assert kinds(retried) == [Booked] * 2
    assert await balance(client, creditor) == 200


async def test_when_the_status_query_times_out_too_the_outcome_stays_unknown_and_the_retry_books_once(
    adapter: HttpCoreBanking, client: httpx.AsyncClient, core: CoreBank, faults: SetFaults
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    p = payment(debtor, creditor, 100)
    # Every API request waits 1.5 s before it is handled: the booking and the status query both time out.
    await faults(latency_ms=int(READ_TIMEOUT * 1000) + 1_000)

    [unknown] = await adapter.book([p])
    await faults()
    [retried] = await adapter.book([p])

    assert isinstance(unknown, CoreOutcomeUnknown)
    assert unknown.retryable
    assert "maybe booked" in str(unknown)
    assert isinstance(retried, Booked)
    assert await transfers_recorded(core, [p]) == {key_of(p): 2}
    assert await balance(client, creditor) == 100


async def test_a_core_that_is_down_is_retryable_and_books_nothing_until_the_retry(
    adapter: HttpCoreBanking, client: httpx.AsyncClient, core: CoreBank, faults: SetFaults
) -> None:
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    payments = [payment(debtor, creditor, 100) for _ in range(3)]
    await faults(down_seconds=30)

    down = await adapter.book(payments)
    await faults()
    meanwhile = await statuses(client, payments)
    retried = await adapter.book(payments)

    assert kinds(down) == [CoreOutcomeUnknown] * 3
    assert meanwhile == [("unknown", None)] * 3
    assert kinds(retried) == [Booked] * 3
    assert await transfers_recorded(core, payments) == {key_of(p): 2 for p in payments}
    await check_ledger(core.database_url)


async def test_a_killed_core_is_retryable_and_after_its_restart_each_payment_is_booked_once(
    tmp_path: Path, watching: Watching
) -> None:
    database_url = await create_corebank_database()
    core = start_corebank(database_url, tmp_path / "before.log")
    adapter = watching(core, threshold=1000, read_timeout=READ_TIMEOUT).adapter
    try:
        await wait_ready(core)
        async with core.client(timeout=10) as client:
            debtor, creditor = await open_account(client, 1_000), await open_account(client)
        payments = [payment(debtor, creditor, 100) for _ in range(3)]
        booked_before = await adapter.book(payments[:1])
        core.process.kill()

        down = await adapter.book(payments)
        core = start_corebank(database_url, tmp_path / "after.log", port=core.process.port)
        await wait_ready(core)
        retried = await adapter.book(payments)

        assert kinds(booked_before) == [Booked]
        assert kinds(down) == [CoreBankingUnavailable] * 3
        assert all("nothing was sent" in str(o) for o in down)
        assert kinds(retried) == [Booked] * 3
        assert transfer_ids(retried)[0] == transfer_ids(booked_before)[0]
        assert [o.replayed for o in retried if isinstance(o, Booked)] == [True, False, False]
        assert await transfers_recorded(core, payments) == {key_of(p): 2 for p in payments}
        ledger = await check_ledger(database_url)
        assert ledger.booked_keys == 3
    finally:
        core.process.stop()
        await drop_database(database_url)


async def test_each_request_to_the_core_is_timed_by_route_and_result(
    core: CoreBank, client: httpx.AsyncClient, faults: SetFaults
) -> None:
    """remit_core_request_seconds: the core's share of a batch, the lost answer and the status query included."""
    heard: list[tuple[str, str, float]] = []
    settings = Settings(
        core_banking_url=core.url,
        core_banking_token=SecretStr(core.token),
        core_banking_read_timeout_seconds=READ_TIMEOUT,
    )
    async with core_client(settings) as http:
        breaker = CircuitBreaker(lambda: core_ready(http), threshold=1000, probe_interval=0.2)
        adapter = HttpCoreBanking(http, breaker, 1000, lambda *sample: heard.append(sample))
        debtor, creditor = await open_account(client, 1_000), await open_account(client)
        await adapter.book([payment(debtor, creditor, 100)])
        await faults(drop_rate=1.0)
        await adapter.book([payment(debtor, creditor, 100)])
        await faults()
        await breaker.aclose()

    assert [(route, result) for route, result, _ in heard] == [
        ("transfers_batch", "200"),
        ("transfers_batch", "RemoteProtocolError"),
        ("transfers_status", "200"),
    ]
    assert all(0 < seconds < 30 for _, _, seconds in heard)


async def test_a_group_split_into_parallel_requests_books_each_payment_once_in_its_position(
    core: CoreBank, client: httpx.AsyncClient
) -> None:
    heard: list[tuple[str, str, float]] = []
    settings = Settings(core_banking_url=core.url, core_banking_token=SecretStr(core.token))
    async with core_client(settings) as http:
        breaker = CircuitBreaker(lambda: core_ready(http), threshold=1000, probe_interval=0.2)
        adapter = HttpCoreBanking(http, breaker, 1000, lambda *sample: heard.append(sample), parallel=3)
        debtor, creditor, closed = (
            await open_account(client, 1_000),
            await open_account(client),
            await open_account(client, status="closed"),
        )
        payments = [payment(debtor, creditor, 100) for _ in range(6)] + [payment(debtor, closed, 100)]
        outcomes = await adapter.book(payments)
        again = await adapter.book(payments)
        await breaker.aclose()

    assert kinds(outcomes) == [Booked] * 6 + [AccountClosed]
    assert [(route, result) for route, result, _ in heard] == [("transfers_batch", "200")] * 6  # 3 + 3
    assert transfer_ids(again) == transfer_ids(outcomes)
    assert await transfers_recorded(core, payments) == {key_of(p): 2 for p in payments[:6]} | {key_of(payments[6]): 0}
    assert (await balance(client, debtor), await balance(client, creditor)) == (400, 600)
    await check_ledger(core.database_url)

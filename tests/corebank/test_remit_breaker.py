"""The circuit breaker in front of the reference core, a real process: it opens after N consecutive failures,
fails fast while open (nothing sent), probes /readyz, closes by itself when the core is back (restarted after
kill -9, or at the end of an outage), and tells its listeners each change. Refusals never count."""

import time
from pathlib import Path

import httpx
import pytest

from app.consumer.breaker import BreakerState
from app.consumer.core_banking import Booked
from app.errors import CircuitOpen, CoreBankingUnavailable, CoreOutcomeUnknown, InsufficientFunds
from tests.utils.core_adapter import Watched, Watching, kinds, payment
from tests.utils.corebank import (
    CoreBank,
    SetFaults,
    check_ledger,
    create_corebank_database,
    open_account,
    start_corebank,
    wait_ready,
)
from tests.utils.services import drop_database, eventually

pytestmark = pytest.mark.integration

PROBE_INTERVAL = 0.2


def states(watched: Watched) -> list[BreakerState]:
    return [s.state for s in watched.heard]


async def closed(watched: Watched) -> bool:
    return not watched.breaker.is_open and len(watched.heard) == 2


async def probed(watched: Watched, times: int) -> bool:
    return watched.sent("/readyz") >= times


async def test_it_opens_after_n_failures_fails_fast_and_closes_when_the_killed_core_is_back(
    tmp_path: Path, watching: Watching
) -> None:
    database_url = await create_corebank_database()
    core = start_corebank(database_url, tmp_path / "before.log")
    try:
        await wait_ready(core)
        watched = watching(core, threshold=3, read_timeout=2.0, probe_interval=PROBE_INTERVAL)
        async with core.client(timeout=10) as client:
            debtor, creditor = await open_account(client, 1_000), await open_account(client)
        payments = [payment(debtor, creditor, 100) for _ in range(4)]
        assert kinds(await watched.adapter.book(payments[:1])) == [Booked]
        core.process.kill()

        below = [await watched.adapter.book([p]) for p in payments[1:3]]
        status_below = watched.breaker.status
        at = await watched.adapter.book(payments[3:])
        sent = watched.sent("/transfers/batch")
        started = time.monotonic()
        fast = await watched.adapter.book(payments)
        fast_seconds = time.monotonic() - started
        sent_while_open = watched.sent("/transfers/batch")
        await eventually(lambda: probed(watched, 2), timeout=10, poll=0.05)
        still_open = watched.breaker.is_open
        core = start_corebank(database_url, tmp_path / "after.log", port=core.process.port)
        await wait_ready(core)
        await eventually(lambda: closed(watched), timeout=30, poll=0.05)
        retried = await watched.adapter.book(payments)

        assert [kinds(o) for o in below] == [[CoreBankingUnavailable]] * 2
        assert (status_below.state, status_below.consecutive_failures) == (BreakerState.CLOSED, 2)
        assert kinds(at) == [CoreBankingUnavailable]
        assert kinds(fast) == [CircuitOpen] * 4
        assert all(o.retryable for o in fast if isinstance(o, CircuitOpen))
        assert sent_while_open == sent  # nothing sent while open
        assert fast_seconds < 0.5
        assert still_open  # probes of a dead core keep it open
        assert states(watched) == [BreakerState.OPEN, BreakerState.CLOSED]
        opened = watched.heard[0]
        assert (opened.consecutive_failures, opened.threshold, opened.last_failure) == (3, 3, "ConnectError")
        assert watched.breaker.status.times_opened == 1
        assert kinds(retried) == [Booked] * 4
        assert (await check_ledger(database_url)).booked_keys == 4
    finally:
        core.process.stop()
        await drop_database(database_url)


async def test_an_outage_opens_it_and_it_closes_by_itself_when_readyz_answers_again(
    core: CoreBank, client: httpx.AsyncClient, faults: SetFaults, watching: Watching
) -> None:
    watched = watching(core, threshold=2, read_timeout=2.0, probe_interval=PROBE_INTERVAL)
    debtor, creditor = await open_account(client, 1_000), await open_account(client)
    p = payment(debtor, creditor, 100)
    await faults(down_seconds=2)
    outage_started = time.monotonic()

    # One call is two failed requests: the booking's 503, then the status query's 503.
    down = await watched.adapter.book([p])
    opened = watched.breaker.is_open
    await eventually(lambda: closed(watched), timeout=30, poll=0.05)
    closed_after = time.monotonic() - outage_started
    [booked] = await watched.adapter.book([p])

    assert kinds(down) == [CoreOutcomeUnknown]
    assert opened
    assert states(watched) == [BreakerState.OPEN, BreakerState.CLOSED]
    assert watched.heard[0].last_failure == "HTTP 503"
    assert watched.sent("/readyz") >= 2  # 503 while down, then 200
    assert closed_after >= 2
    assert isinstance(booked, Booked)
    await check_ledger(core.database_url)


async def test_refusals_never_open_it(core: CoreBank, client: httpx.AsyncClient, watching: Watching) -> None:
    watched = watching(core, threshold=2, read_timeout=2.0, probe_interval=PROBE_INTERVAL)
    poor, creditor = await open_account(client, 10), await open_account(client)

    refused = [await watched.adapter.book([payment(poor, creditor, 100)]) for _ in range(4)]

    assert [kinds(o) for o in refused] == [[InsufficientFunds]] * 4
    assert watched.breaker.status.state is BreakerState.CLOSED
    assert watched.breaker.status.consecutive_failures == 0
    assert watched.heard == []

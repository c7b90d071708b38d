"""The circuit breaker's rules, with a probe that answers what the test says (the real core: tests/corebank/)."""

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from app.consumer.breaker import BreakerState, BreakerStatus, CircuitBreaker
from tests.utils.services import eventually


class Core:
    """Stands for the core's readiness: the probe answers `ready`, and counts how often it was asked."""

    def __init__(self) -> None:
        self.ready = False
        self.probes = 0

    async def probe(self) -> bool:
        self.probes += 1
        return self.ready


@pytest.fixture
def core() -> Core:
    return Core()


@pytest.fixture
async def breaker(core: Core) -> AsyncIterator[CircuitBreaker]:
    made = CircuitBreaker(core.probe, threshold=3, probe_interval=0.05)
    yield made
    await made.aclose()


def record(breaker: CircuitBreaker) -> list[BreakerStatus]:
    heard: list[BreakerStatus] = []

    async def listener(status: BreakerStatus) -> None:
        heard.append(status)

    breaker.subscribe(listener)
    return heard


async def until(condition: Callable[[], bool]) -> None:
    async def check() -> bool:
        return condition()

    await eventually(check, timeout=5, poll=0.01)


async def test_it_opens_at_the_threshold_not_before(breaker: CircuitBreaker) -> None:
    breaker.record_failure("ConnectError")
    breaker.record_failure("ConnectError")
    assert (breaker.is_open, breaker.status.consecutive_failures) == (False, 2)

    breaker.record_failure("HTTP 503")

    status = breaker.status
    assert (status.state, status.consecutive_failures, status.last_failure, status.times_opened) == (
        BreakerState.OPEN,
        3,
        "HTTP 503",
        1,
    )


async def test_only_consecutive_failures_count(breaker: CircuitBreaker) -> None:
    for _ in range(5):
        breaker.record_failure("ReadTimeout")
        breaker.record_failure("ReadTimeout")
        breaker.record_success()
    assert not breaker.is_open
    assert breaker.status.consecutive_failures == 0


async def test_it_probes_while_open_and_closes_by_itself_when_the_core_is_ready(
    breaker: CircuitBreaker, core: Core
) -> None:
    heard = record(breaker)
    for _ in range(3):
        breaker.record_failure("ConnectError")
    await until(lambda: core.probes >= 3)
    assert breaker.is_open  # probes that fail keep it open

    core.ready = True
    await until(lambda: not breaker.is_open)

    await until(lambda: len(heard) == 2)
    assert [s.state for s in heard] == [BreakerState.OPEN, BreakerState.CLOSED]
    assert heard[0].consecutive_failures == 3
    assert breaker.status.consecutive_failures == 0
    probes = core.probes
    await asyncio.sleep(0.2)
    assert core.probes == probes  # closed: no more probing


async def test_an_answer_while_open_does_not_close_it(breaker: CircuitBreaker) -> None:
    for _ in range(3):
        breaker.record_failure("ConnectError")
    breaker.record_success()
    breaker.record_failure("ConnectError")  # while open: remembered, not counted again
    status = breaker.status
    assert (status.state, status.consecutive_failures, status.last_failure) == (BreakerState.OPEN, 3, "ConnectError")


async def test_it_opens_again_after_closing(breaker: CircuitBreaker, core: Core) -> None:
    heard = record(breaker)
    core.ready = True
    for _ in range(3):
        breaker.record_failure("ConnectError")
    await until(lambda: not breaker.is_open)
    for _ in range(3):
        breaker.record_failure("HTTP 500")
    await until(lambda: not breaker.is_open)

    await until(lambda: len(heard) == 4)
    assert [s.state for s in heard] == [BreakerState.OPEN, BreakerState.CLOSED] * 2
    assert breaker.status.times_opened == 2


async def test_a_failing_listener_or_probe_stops_nothing(core: Core) -> None:
    async def broken(status: BreakerStatus) -> None:
        raise RuntimeError("listener bug")

    async def raising_probe() -> bool:
        core.probes += 1
        if core.probes == 1:
            raise RuntimeError("probe bug")
        return True

    breaker = CircuitBreaker(raising_probe, threshold=1, probe_interval=0.05)
    breaker.subscribe(broken)
    heard = record(breaker)
    try:
        breaker.record_failure("ConnectError")
        await until(lambda: len(heard) == 2)
    finally:
        await breaker.aclose()
    assert [s.state for s in heard] == [BreakerState.OPEN, BreakerState.CLOSED]
    assert core.probes == 2


async def test_listeners_are_awaited_in_order_outside_the_failing_call(breaker: CircuitBreaker, core: Core) -> None:
    core.ready = True
    order: list[str] = []
    release = asyncio.Event()

    async def slow_pause(status: BreakerStatus) -> None:
        order.append(f"start {status.state}")
        if status.state is BreakerState.OPEN:
            await release.wait()
        order.append(f"end {status.state}")

    breaker.subscribe(slow_pause)
    for _ in range(3):
        breaker.record_failure("ConnectError")  # returns at once: the listener runs on its own task
    await until(lambda: not breaker.is_open)
    await asyncio.sleep(0.05)
    assert order == ["start open"]  # the close waits for the open's listener to finish
    release.set()
    await until(lambda: len(order) == 4)
    assert order == ["start open", "end open", "start closed", "end closed"]

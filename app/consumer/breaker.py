"""The circuit breaker in front of the core: stop sending payments while the core is down, resume by itself.

After `threshold` consecutive failed requests (unreachable, timed out, 5xx; a refusal is an answer, not a
failure) it opens: the adapter then fails every payment fast with a retryable CircuitOpen, and listeners are
told, so that a pool manager pauses its consumers (the broker keeps their messages, TTLs keep running). While
open it probes the core's readiness every `probe_interval` seconds; the first probe that passes closes it and
listeners are told again (resume).

Written here rather than taken from a library: the asyncio-capable breakers on PyPI (purgatory 3.0,
aiobreaker, circuitbreaker, pybreaker) close by letting an arbitrary call through after a timeout (half-open)
and have no probe of their own, so a paused consumer would never send the call that closes them; their hooks
are synchronous (purgatory, aiobreaker, pybreaker) or absent (circuitbreaker); and purgatory counts a
cancelled call as a failure (or, excluded, as a success that closes a half-open circuit). What remit needs is
this small state machine with a probe loop and awaited listeners.
"""

import asyncio
import enum
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

log = logging.getLogger("remit.core_banking")


class BreakerState(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"


@dataclass(frozen=True, slots=True)
class BreakerStatus:
    """What /readyz, /metrics, the logs and `remit workers status` show of the breaker."""

    state: BreakerState
    consecutive_failures: int
    threshold: int
    last_failure: str | None  # the kind of the last failure (an exception class, an HTTP status), no details
    since: datetime  # when it last opened or closed (or was made)
    times_opened: int


Listener = Callable[[BreakerStatus], Awaitable[None]]
Probe = Callable[[], Awaitable[bool]]


class CircuitBreaker:
    def __init__(self, probe: Probe, threshold: int, probe_interval: float) -> None:
        self._probe = probe
        self._threshold = threshold
        self._probe_interval = probe_interval
        self._state = BreakerState.CLOSED
        self._failures = 0
        self._last_failure: str | None = None
        self._since = datetime.now(UTC)
        self._opened_monotonic = 0.0
        self._times_opened = 0
        self._listeners: list[Listener] = []
        # Listeners get the changes in order, one at a time, on a task of their own: a pool manager pausing
        # consumers must never run inside (and wait for) the call whose failure opened the breaker.
        self._changes: asyncio.Queue[BreakerStatus] = asyncio.Queue()
        self._dispatcher: asyncio.Task[None] | None = None
        self._prober: asyncio.Task[None] | None = None

    @property
    def status(self) -> BreakerStatus:
        return BreakerStatus(
            self._state, self._failures, self._threshold, self._last_failure, self._since, self._times_opened
        )

    @property
    def is_open(self) -> bool:
        return self._state is BreakerState.OPEN

    def subscribe(self, listener: Listener) -> None:
        """Await `listener(status)` on every change: OPEN means stop taking payments, CLOSED resume."""
        self._listeners.append(listener)

    def record_success(self) -> None:
        """The core answered. While open only a probe closes the breaker: an answer to a request sent before
        it opened says little about now."""
        if self._state is BreakerState.CLOSED:
            self._failures = 0

    def record_failure(self, kind: str) -> None:
        self._last_failure = kind
        if self._state is BreakerState.OPEN:
            return
        self._failures += 1
        if self._failures >= self._threshold:
            self._open()

    async def aclose(self) -> None:
        """Stop probing and telling listeners (at shutdown)."""
        tasks = [task for task in (self._prober, self._dispatcher) if task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._prober = self._dispatcher = None

    def _open(self) -> None:
        self._state = BreakerState.OPEN
        self._since = datetime.now(UTC)
        self._opened_monotonic = time.monotonic()
        self._times_opened += 1
        log.warning(
            "core banking circuit breaker opened after %d consecutive failures (last: %s); probing every %.1f s",
            self._failures,
            self._last_failure,
            self._probe_interval,
        )
        self._announce()
        self._prober = asyncio.create_task(self._probe_until_ready(), name="breaker-probe")

    def _close(self) -> None:
        self._state = BreakerState.CLOSED
        self._failures = 0
        self._since = datetime.now(UTC)
        log.warning(
            "core banking circuit breaker closed: the core is ready again after %.1f s",
            time.monotonic() - self._opened_monotonic,
        )
        self._announce()

    async def _probe_until_ready(self) -> None:
        while True:
            await asyncio.sleep(self._probe_interval)
            if await self._probe_passes():
                self._close()
                return

    async def _probe_passes(self) -> bool:
        try:
            return await self._probe()
        except Exception:  # a probe that raises has not found the core ready; keep probing
            log.warning("core banking readiness probe failed", exc_info=True)
            return False

    def _announce(self) -> None:
        self._changes.put_nowait(self.status)
        if self._dispatcher is None or self._dispatcher.done():
            self._dispatcher = asyncio.create_task(self._dispatch(), name="breaker-listeners")

    async def _dispatch(self) -> None:
        while True:
            status = await self._changes.get()
            for listener in self._listeners:
                try:
                    await listener(status)
                except Exception:  # one listener's failure must not keep the others from hearing
                    log.exception("a circuit breaker listener failed on %s", status.state)

"""A loop that keeps trying something that failed (publish to the broker, store in PostgreSQL): how long to
wait before the next try, and what to log.

Waits grow exponentially with jitter (each a random share, between half and all, of `base` doubled per
consecutive failure, capped), so a restarted broker is not met by every process at the same instant and a
long outage costs one try every `cap` seconds, not five a second. The log says what changed, not each try:
one ERROR when it starts failing (with its traceback), one WARNING when the waits reach the cap, one
WARNING when it works again, with how long it was down.
"""

import logging
import random
import time
from collections.abc import Callable


class Outage:
    def __init__(
        self,
        what: str,
        log: logging.Logger,
        base: float = 0.5,
        cap: float = 10.0,
        jitter: Callable[[float, float], float] = random.uniform,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._what = what
        self._log = log
        self._base = base
        self._cap = cap
        self._jitter = jitter
        self._clock = clock
        self.failures = 0  # consecutive, since it last worked
        self._since = 0.0

    def failed(self, exc: BaseException) -> float:
        """Note a failed try; how many seconds to wait before the next."""
        self.failures += 1
        ceiling = min(self._cap, self._base * 2 ** (self.failures - 1))
        if self.failures == 1:
            self._since = self._clock()
            self._log.error(
                "%s failed: %s; retrying, backing off to every %gs", self._what, describe(exc), self._cap, exc_info=exc
            )
        elif ceiling == self._cap and self._base * 2 ** (self.failures - 2) < self._cap:
            self._log.warning(
                "%s still failing after %d tries in %.0fs (%s); retrying every %gs or so",
                self._what,
                self.failures,
                self._clock() - self._since,
                describe(exc),
                self._cap,
            )
        return round(self._jitter(ceiling / 2, ceiling), 1)

    def worked(self) -> None:
        """Note a try that worked: the end of an outage, if there was one."""
        if self.failures:
            self._log.warning(
                "%s works again after %.1fs (%d failed tries)", self._what, self._clock() - self._since, self.failures
            )
        self.failures = 0


def describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text[:200]}" if text else type(exc).__name__

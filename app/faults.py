"""Fault injection: die by SIGKILL at a precise point, to prove what survives a crash there."""

import logging
import os
import signal

log = logging.getLogger("remit.faults")


class KillAfter:
    """Calls itself after each event; on the n-th it kills the process with no chance to clean up."""

    def __init__(self, point: str, count: int | None) -> None:
        self._point = point
        self._remaining = count

    def __call__(self) -> None:
        if self._remaining is None:
            return
        self._remaining -= 1
        if self._remaining <= 0:
            log.warning("fault injection: SIGKILL %s", self._point)
            os.kill(os.getpid(), signal.SIGKILL)

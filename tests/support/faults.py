"""Fault injection: die by SIGKILL at a precise point, to prove what survives a crash there."""

import logging
import os
import signal

log = logging.getLogger("remit.faults")


class KillAfter:
    """A fault hook (app/bootstrap.py Ports): on its n-th call it kills the process with no chance to clean up."""

    def __init__(self, point: str, count: int) -> None:
        self._point = point
        self._remaining = count

    def __call__(self) -> None:
        self._remaining -= 1
        if self._remaining <= 0:
            log.warning("fault injection: SIGKILL %s", self._point)
            os.kill(os.getpid(), signal.SIGKILL)

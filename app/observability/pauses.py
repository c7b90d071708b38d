"""Pauses of a process, measured from inside it: each garbage collection, and the event loop's lag.

A delivery that reaches the consumer while its event loop is held up (a full collection walking every object
of the process, a long callback) waits until the loop is free; the publish-to-processed tail then grows in
the `delivered` stage although the broker delivered on time (docs/benchmarks.md, "Latency"). These two
series say whether, how often and for how long that happens (`remit_pause_seconds`).
"""

import asyncio
import gc
import time
from collections.abc import Callable
from typing import Any

ObservePause = Callable[[str, float], None]  # (kind, seconds): Metrics.observe_pause
LAG_INTERVAL_SECONDS = 0.05


class CollectionTimer:
    """A gc.callbacks entry timing every collection; the collector never nests, so one start time is enough."""

    def __init__(self, observe: ObservePause) -> None:
        self._observe = observe
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self._observe(f"gc_gen{info['generation']}", time.perf_counter() - self._started)


async def watch_pauses(observe: ObservePause, interval: float = LAG_INTERVAL_SECONDS) -> None:
    """Run until cancelled: time every collection, and observe how late each `interval` timer fires."""
    timer = CollectionTimer(observe)
    gc.callbacks.append(timer)
    loop = asyncio.get_running_loop()
    try:
        while True:
            due = loop.time() + interval
            await asyncio.sleep(interval)
            observe("loop_lag", max(loop.time() - due, 0.0))
    finally:
        gc.callbacks.remove(timer)

"""Pauses of a process, measured from inside it: each garbage collection, and the event loop's lag.

A delivery that reaches the consumer while its event loop is held up (a full collection walking every object
of the process, a long callback) waits until the loop is free; the publish-to-processed tail then grows in
the `delivered` stage although the broker delivered on time (docs/benchmarks.md, "Latency"). These two
series say whether, how often and for how long that happens (`remit_pause_seconds`).

A collection can start inside any allocation, including one made while a metric holds its lock (a new label
child, a scrape): the collector's callback therefore only appends to a deque (no lock), and the watcher,
on the event loop, hands what it finds there to the metrics. Observing from the callback itself deadlocked
the consumer (the metric's lock taken twice by one thread).
"""

import asyncio
import gc
import time
from collections import deque
from collections.abc import Callable
from typing import Any

ObservePause = Callable[[str, float], None]  # (kind, seconds): Metrics.observe_pause
LAG_INTERVAL_SECONDS = 0.05
MAX_PENDING = 10_000  # collections timed between two ticks of the watcher, at most (more are dropped)


class CollectionTimer:
    """A gc.callbacks entry timing every collection; the collector never nests, so one start time is enough."""

    def __init__(self) -> None:
        self.pending: deque[tuple[str, float]] = deque(maxlen=MAX_PENDING)
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pending.append((f"gc_gen{info['generation']}", time.perf_counter() - self._started))

    def drain(self, observe: ObservePause) -> None:
        """Observe the collections timed so far; those that observing them sets off wait for the next drain."""
        for _ in range(len(self.pending)):
            observe(*self.pending.popleft())


async def watch_pauses(observe: ObservePause, interval: float = LAG_INTERVAL_SECONDS) -> None:
    """Run until cancelled: time every collection, and observe how late each `interval` timer fires."""
    timer = CollectionTimer()
    gc.callbacks.append(timer)
    loop = asyncio.get_running_loop()
    try:
        while True:
            due = loop.time() + interval
            await asyncio.sleep(interval)
            observe("loop_lag", max(loop.time() - due, 0.0))
            timer.drain(observe)
    finally:
        gc.callbacks.remove(timer)
        timer.drain(observe)

"""The process's own pauses (app/observability/pauses.py): a held-up event loop and each collection are seen."""

import asyncio
import gc
import subprocess
import sys
import time
from contextlib import suppress

from app.observability.metrics import Metrics
from app.observability.pauses import watch_pauses
from tests.utils.ingest_process import ROOT


def _count(metrics: Metrics, kind: str, le: str | None = None) -> float:
    name, labels = (
        ("remit_pause_seconds_count", {"kind": kind})
        if le is None
        else ("remit_pause_seconds_bucket", {"kind": kind, "le": le})
    )
    return metrics.registry.get_sample_value(name, labels) or 0.0


async def _watching(metrics: Metrics) -> asyncio.Task[None]:
    task = asyncio.create_task(watch_pauses(metrics.observe_pause, interval=0.01))
    await asyncio.sleep(0.05)  # started, a few timers observed
    return task


async def _stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    with suppress(asyncio.CancelledError):
        await task


async def test_a_held_up_event_loop_is_observed_as_lag() -> None:
    metrics = Metrics()
    task = await _watching(metrics)
    time.sleep(0.3)  # noqa: ASYNC251  # the loop held up on purpose, as a long callback would hold it
    await asyncio.sleep(0.05)
    await _stop(task)

    assert _count(metrics, "loop_lag") >= 3
    assert _count(metrics, "loop_lag") - _count(metrics, "loop_lag", le="0.1") >= 1  # the 0.3 s, over 100 ms


async def test_every_collection_is_timed_by_generation_and_the_timer_leaves_with_the_watch() -> None:
    metrics = Metrics()
    callbacks = len(gc.callbacks)
    task = await _watching(metrics)
    gc.collect(2)
    gc.collect(0)
    await _stop(task)

    assert _count(metrics, "gc_gen2") >= 1
    assert _count(metrics, "gc_gen0") >= 1
    assert len(gc.callbacks) == callbacks
    seen = _count(metrics, "gc_gen2")
    gc.collect(2)
    assert _count(metrics, "gc_gen2") == seen  # a collection after the watch ended is not timed


_COLLECTING_EVERYWHERE = """
import asyncio, gc
from app.observability.metrics import Metrics
from app.observability.pauses import watch_pauses

async def main():
    metrics = Metrics()
    gc.set_threshold(1)  # a collection at almost every allocation, so also inside a metric's own lock
    task = asyncio.create_task(watch_pauses(metrics.observe_pause, interval=0.001))
    await asyncio.sleep(0.3)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    gc.set_threshold(700)
    print(metrics.registry.get_sample_value("remit_pause_seconds_count", {"kind": "gc_gen0"}))

asyncio.run(main())
"""


def test_a_collection_inside_a_metrics_lock_does_not_deadlock_the_process() -> None:
    # Before: the collector's callback observed the histogram itself; a collection that started while the
    # watcher was creating the histogram's label child (holding its lock) took that lock again: the consumer
    # hung, found by bench/latency_bench.py (py-spy: labels -> observe_pause -> CollectionTimer -> labels).
    done = subprocess.run(
        [sys.executable, "-c", _COLLECTING_EVERYWHERE], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert float(done.stdout.split()[-1]) > 0

"""The process's own pauses (app/observability/pauses.py): a held-up event loop and each collection are seen."""

import asyncio
import gc
import time
from contextlib import suppress

from app.observability.metrics import Metrics
from app.observability.pauses import watch_pauses


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

"""The queue workers' settlement rules, against an in-memory channel: the settled head of the channel is
acked with one `ack(multiple)`; an unsettled delivery is returned to the queue and never covered by a
multiple ack; batches that finish out of order are acked only up to the first unfinished one; a
processing bug acks nothing; stop settles what has arrived; a new channel (reconnection) starts over,
and the pool consumes on it again by itself; a consumer the broker cancels leaves the pool stopped;
a body over the cap is cut to a prefix on arrival, and a pool's window never holds more than its bytes;
under steady load a pool starts at most one batch per batch interval, never holding back a full batch,
a pool idle for an interval, or a stop.
(What the broker does with those frames is tested on RabbitMQ: tests/integration and tests/chaos.)"""

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest
from aiormq import spec
from aiormq.abc import DeliveredMessage
from pamqp.header import ContentHeader

from app.consumer import worker as worker_module
from app.consumer.delivery import BodyLimits, Delivery, Truncated
from app.consumer.worker import ProcessBatch, QueueWorkers, Receipt, Settlements

Callback = Callable[[DeliveredMessage], Awaitable[None]]
Settled = tuple[str, int, bool]
BODIES = BodyLimits(cap=65_536, prefix=4096, pool_bytes=64 * 1024 * 1024)


class FakeUnderlay:
    """aiormq's channel as the workers use it: consume, cancel, ack, nack; what it was told is recorded."""

    def __init__(self, settlements: list[Settled] | None = None) -> None:
        self.settlements: list[Settled] = settlements if settlements is not None else []
        self.callback: Callback | None = None
        self.consumer_tag: str | None = None
        self.cancelled = False
        self.on_consumer_cancel_callbacks: set[Callable[[spec.Basic.Cancel], Any]] = set()

    async def basic_consume(
        self, queue: str, callback: Callback, *, no_ack: bool, consumer_tag: str
    ) -> spec.Basic.ConsumeOk:
        assert not no_ack, "every delivery is acked after its commit"
        self.callback, self.consumer_tag = callback, consumer_tag
        return spec.Basic.ConsumeOk(consumer_tag)

    async def basic_cancel(self, tag: str) -> None:
        self.cancelled = True

    async def basic_ack(self, tag: int, multiple: bool = False) -> None:
        self.settlements.append(("ack", tag, multiple))

    async def basic_nack(self, tag: int, multiple: bool = False, requeue: bool = True) -> None:
        self.settlements.append(("nack", tag, requeue))

    def broker_cancels(self) -> None:
        for callback in self.on_consumer_cancel_callbacks:
            callback(spec.Basic.Cancel(self.consumer_tag))


def message(tag: int, channel: Any, body: bytes | None = None) -> DeliveredMessage:
    properties = spec.Basic.Properties(
        content_type="application/json", message_id=f"m-{tag}", user_id="guest", headers={"tenantUUID": "t1"}
    )
    return DeliveredMessage(
        delivery=spec.Basic.Deliver("ctag", tag, False, "payments", "t1.payment"),
        header=ContentHeader(properties=properties),
        body=body if body is not None else f"body-{tag}".encode(),
        channel=channel,
    )


class FakeChannel:
    """aio-pika's robust channel: qos, the queue's declaration, its aiormq channel, its reopen callbacks."""

    def __init__(self) -> None:
        self.underlay = FakeUnderlay()
        self.prefetch = 0
        self.is_closed = False
        self.reopen_callbacks: set[Callable[[Any], Awaitable[None]]] = set()

    async def set_qos(self, prefetch_count: int) -> None:
        self.prefetch = prefetch_count

    async def declare_queue(self, name: str, durable: bool, arguments: dict[str, Any]) -> None:
        return None

    async def get_underlay_channel(self) -> FakeUnderlay:
        return self.underlay

    async def reopen(self) -> None:
        """A reconnection: a new aiormq channel under the same robust one, with no consumer on it."""
        self.underlay = FakeUnderlay(self.underlay.settlements)
        for callback in list(self.reopen_callbacks):
            await callback(self)

    async def close(self) -> None:
        self.is_closed = True


class FakeConnection:
    def __init__(self) -> None:
        self.channels: list[FakeChannel] = []

    async def channel(self) -> FakeChannel:
        self.channels.append(FakeChannel())
        return self.channels[-1]


class Recorder:
    """A processor that records each batch and answers with a scripted verdict per delivery."""

    def __init__(
        self, verdict: Callable[[Delivery], bool] = lambda d: True, fail: bool = False, fails_on: str | None = None
    ) -> None:
        self.batches: list[list[str | None]] = []
        self._verdict = verdict
        self._fail = fail
        self._fails_on = fails_on  # a message id that makes the whole batch raise
        self.release = asyncio.Event()
        self.release.set()

    async def __call__(self, deliveries: Sequence[Delivery]) -> list[bool]:
        await self.release.wait()
        self.batches.append([d.message_id for d in deliveries])
        if self._fail or any(d.message_id == self._fails_on for d in deliveries):
            raise RuntimeError("a bug in the processor")
        return [self._verdict(d) for d in deliveries]


@pytest.fixture(autouse=True)
def no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_module, "REQUEUE_PAUSE_SECONDS", 0.0)


async def _started(
    process: ProcessBatch, max_batch: int = 100, workers: int = 1, batch_interval: float = 0.0
) -> tuple[QueueWorkers, FakeChannel]:
    connection = FakeConnection()
    worker = QueueWorkers(
        connection,  # type: ignore[arg-type]
        "payments.work.free",
        {},
        workers,
        64,
        max_batch,
        process,
        BODIES,
        batch_interval=batch_interval,
    )
    await worker.start()
    return worker, connection.channels[0]


async def _deliver(channel: FakeChannel, tags: range) -> list[Settled]:
    underlay = channel.underlay
    assert underlay.callback is not None
    for tag in tags:
        await underlay.callback(message(tag, underlay))
    return underlay.settlements


async def _idle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_settled_batch_is_acked_once_with_multiple() -> None:
    process = Recorder()
    process.release.clear()  # hold the first batch so the rest arrive together
    worker, channel = await _started(process)
    assert channel.prefetch == 64
    assert worker.running == 1
    await _deliver(channel, range(1, 2))
    await _idle()
    settlements = await _deliver(channel, range(2, 6))
    process.release.set()
    await _idle()
    assert process.batches == [["m-1"], ["m-2", "m-3", "m-4", "m-5"]]
    assert settlements == [("ack", 1, True), ("ack", 5, True)]
    await worker.stop()


async def test_an_unsettled_delivery_goes_back_before_a_multiple_ack_passes_it() -> None:
    process = Recorder(verdict=lambda d: d.message_id != "m-3")
    process.release.clear()
    worker, channel = await _started(process)
    settlements = await _deliver(channel, range(1, 6))
    process.release.set()
    await _idle()
    assert process.batches == [["m-1", "m-2", "m-3", "m-4", "m-5"]]
    # The nack leaves first, so tag 3 is no longer unacked when ack(5, multiple) reaches the broker.
    assert settlements == [("nack", 3, True), ("ack", 5, True)]
    await worker.stop()


async def test_a_processing_bug_acks_nothing() -> None:
    process = Recorder(fail=True)
    worker, channel = await _started(process)
    settlements = await _deliver(channel, range(1, 4))
    await _idle()
    assert settlements
    assert all(kind == "nack" for kind, _, _ in settlements)
    assert worker.running, "a bug in one batch must not stop the worker"
    await worker.stop()


async def test_a_bug_one_delivery_triggers_sends_back_that_delivery_alone() -> None:
    """Bulkheads: the batch is processed again one delivery at a time, so the others (another tenant's, say) are
    settled as usual and only the one the processor raises for goes back to the queue."""
    process = Recorder(fails_on="m-3")
    process.release.clear()
    worker, channel = await _started(process)
    settlements = await _deliver(channel, range(1, 6))
    process.release.set()
    await _idle()
    await worker.stop()
    assert process.batches[-4:] == [["m-2"], ["m-3"], ["m-4"], ["m-5"]], "the failed batch again, one at a time"
    assert [s for s in settlements if s[0] == "nack"] == [("nack", 3, True)], "only the one it raises for goes back"
    assert max(tag for kind, tag, _ in settlements if kind == "ack") == 5, "every other one is acked"


async def test_batches_are_capped_and_stop_settles_what_arrived() -> None:
    process = Recorder()
    process.release.clear()
    worker, channel = await _started(process, max_batch=2)
    settlements = await _deliver(channel, range(1, 6))
    stopping = asyncio.create_task(worker.stop())
    await _idle()
    assert channel.underlay.cancelled, "stop takes no more deliveries first"
    process.release.set()
    await stopping
    assert process.batches == [["m-1", "m-2"], ["m-3", "m-4"], ["m-5"]]
    assert [tag for _, tag, _ in settlements] == [2, 4, 5]
    assert channel.is_closed
    assert not worker.running


async def test_the_window_is_prefetch_times_workers() -> None:
    worker, channel = await _started(Recorder(), workers=3)
    assert channel.prefetch == 3 * 64
    assert worker.running == 3
    await worker.stop()
    assert worker.running == 0


def _receipts(tags: range, channel: Any) -> list[Receipt]:
    return [(channel, tag) for tag in tags]


async def test_out_of_order_batches_ack_only_the_settled_head() -> None:
    channel = FakeUnderlay()
    tracker = Settlements()
    first, second = _receipts(range(1, 4), channel), _receipts(range(4, 7), channel)
    for receipt in first + second:
        tracker.delivered(*receipt)
    await tracker.settle(second, [True, True, True])
    assert channel.settlements == [], "tags 1-3 are still open: acking 6 with multiple would cover them"
    await tracker.settle(first, [True, False, True])
    assert channel.settlements == [("nack", 2, True), ("ack", 6, True)]


async def test_a_new_channel_starts_over() -> None:
    old_channel, new_channel = FakeUnderlay(), FakeUnderlay()
    tracker = Settlements()
    old = _receipts(range(1, 3), old_channel)
    for receipt in old:
        tracker.delivered(*receipt)
    new = _receipts(range(1, 3), new_channel)  # after a reconnection tags restart at 1
    for receipt in new:
        tracker.delivered(*receipt)
    await tracker.settle(old, [True, True])
    assert old_channel.settlements == new_channel.settlements == [], "the old channel's tags mean nothing now"
    await tracker.settle(new, [True, True])
    assert new_channel.settlements == [("ack", 2, True)]


async def test_after_a_reconnection_the_pool_consumes_again_on_the_new_channel() -> None:
    """aio-pika's robust channel restores its own queues' consumers, not one made on its aiormq channel: the
    workers consume again from its reopen callback, and settle only what came on the channel now open."""
    process = Recorder()
    process.release.clear()
    worker, channel = await _started(process)
    old = channel.underlay
    await _deliver(channel, range(1, 3))
    await _idle()  # that batch is in flight when the connection drops
    await channel.reopen()
    assert channel.underlay is not old
    assert channel.underlay.callback is not None, "consuming on the new channel"
    settlements = await _deliver(channel, range(1, 2))  # the new channel numbers from 1 again
    process.release.set()
    await _idle()
    assert process.batches == [["m-1", "m-2"], ["m-1"]]
    assert settlements == [("ack", 1, True)], "one ack, for the new channel's delivery; the old ones went back"
    assert worker.running == 1
    await worker.stop()
    assert channel.underlay.cancelled


async def test_a_consumer_the_broker_cancelled_leaves_the_pool_stopped_until_started_again() -> None:
    worker, channel = await _started(Recorder())
    channel.underlay.broker_cancels()  # its queue was deleted
    assert worker.running == 0, "the pool manager's sync sees it stopped, and starts it again"
    await worker.start()
    assert worker.running == 1
    assert channel.is_closed, "starting again closed what the lost consumer left"
    assert len(worker._connection.channels) == 2  # type: ignore[attr-defined]
    await worker.stop()


async def test_a_body_over_the_cap_is_cut_to_its_prefix_on_arrival() -> None:
    seen: list[Delivery] = []

    async def keep(deliveries: Sequence[Delivery]) -> list[bool]:
        seen.extend(deliveries)
        return [True] * len(deliveries)

    worker, channel = await _started(keep)
    callback = channel.underlay.callback
    assert callback is not None
    bodies = {1: b"a" * 65_536, 2: b"b" * 65_537, 3: b"c" * 20 * 1024 * 1024}
    for tag, body in bodies.items():
        await callback(message(tag, channel.underlay, body))
    await _idle()
    assert [len(d.body) for d in seen] == [65_536, 4096, 4096]
    assert seen[0].truncated is None
    for delivery, tag in zip(seen[1:], (2, 3), strict=True):
        assert delivery.truncated == Truncated(len(bodies[tag]), hashlib.sha256(bodies[tag]).hexdigest())
        assert delivery.body == bodies[tag][:4096]
        assert delivery.size == len(bodies[tag])
    await worker.stop()


@pytest.mark.parametrize(
    ("pool_bytes", "window"),
    [(64 * 1024 * 1024, 64), (16 * 65_536, 16), (16 * 65_536 - 1, 15), (1, 1)],
)
def test_a_pools_window_never_holds_more_bytes_than_its_budget(pool_bytes: int, window: int) -> None:
    bodies = BodyLimits(cap=65_536, prefix=4096, pool_bytes=pool_bytes)
    assert bodies.window(64) == window


async def test_under_steady_load_the_next_batch_waits_out_the_interval_and_takes_all_that_arrived() -> None:
    process = Recorder()
    worker, channel = await _started(process, batch_interval=0.2)
    await _deliver(channel, range(1, 2))
    await _idle()
    assert process.batches == [["m-1"]], "the first delivery after an idle interval starts at once"
    await _deliver(channel, range(2, 4))
    await _idle()
    await _deliver(channel, range(4, 6))
    await _idle()
    assert process.batches == [["m-1"]], "a batch began less than an interval ago: the pool lingers"
    await asyncio.sleep(0.25)
    assert process.batches == [["m-1"], ["m-2", "m-3", "m-4", "m-5"]]
    await worker.stop()


async def test_a_pool_idle_for_an_interval_starts_at_once() -> None:
    process = Recorder()
    worker, channel = await _started(process, batch_interval=0.05)
    await _deliver(channel, range(1, 2))
    await asyncio.sleep(0.08)
    await _deliver(channel, range(2, 3))
    await _idle()
    assert process.batches == [["m-1"], ["m-2"]]
    await worker.stop()


async def test_a_full_batch_and_a_stop_never_wait_out_the_interval() -> None:
    process = Recorder()
    worker, channel = await _started(process, max_batch=2, batch_interval=60.0)
    await _deliver(channel, range(1, 2))
    await _idle()
    await _deliver(channel, range(2, 3))
    await _idle()
    assert process.batches == [["m-1"]], "lingering with half a batch"
    await _deliver(channel, range(3, 4))
    await _idle()
    assert process.batches == [["m-1"], ["m-2", "m-3"]], "a full batch ends the linger at once"
    settlements = await _deliver(channel, range(4, 5))
    await _idle()
    assert process.batches == [["m-1"], ["m-2", "m-3"]]
    await asyncio.wait_for(worker.stop(), timeout=5)
    assert process.batches == [["m-1"], ["m-2", "m-3"], ["m-4"]], "stop settles what arrived without lingering"
    assert settlements[-1] == ("ack", 4, True)

"""The queue workers' settlement rules, against an in-memory channel: the settled head of the channel is
acked with one `ack(multiple)`; an unsettled delivery is returned to the queue and never covered by a
multiple ack; batches that finish out of order are acked only up to the first unfinished one; a
processing bug acks nothing; stop settles what has arrived; a new channel (reconnection) starts over;
a body over the cap is cut to a prefix on arrival, and a pool's window never holds more than its bytes.
(What the broker does with those frames is tested on RabbitMQ: tests/integration and tests/chaos.)"""

import asyncio
import hashlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest

from app.consumer import worker as worker_module
from app.consumer.delivery import BodyLimits, Delivery, Truncated
from app.consumer.worker import ProcessBatch, QueueWorkers, Settlements

Callback = Callable[[Any], Awaitable[None]]
BODIES = BodyLimits(cap=65_536, prefix=4096, pool_bytes=64 * 1024 * 1024)


class FakeMessage:
    def __init__(self, tag: int, settlements: list[tuple[str, int, bool]], channel: object = None) -> None:
        self.channel = channel
        self.delivery_tag = tag
        self.body = f"body-{tag}".encode()
        self.headers: dict[str, Any] = {"tenantUUID": "t1"}
        self.content_type = "application/json"
        self.message_id = f"m-{tag}"
        self.user_id = "guest"
        self.redelivered = False
        self.routing_key = "t1.payment"
        self._settlements = settlements

    async def ack(self, multiple: bool = False) -> None:
        self._settlements.append(("ack", self.delivery_tag, multiple))

    async def nack(self, multiple: bool = False, requeue: bool = True) -> None:
        self._settlements.append(("nack", self.delivery_tag, requeue))


class FakeQueue:
    def __init__(self) -> None:
        self.callback: Callback | None = None
        self.cancelled = False

    async def consume(self, callback: Callback) -> str:
        self.callback = callback
        return "ctag-1"

    async def cancel(self, tag: str) -> None:
        self.cancelled = True


class FakeChannel:
    def __init__(self) -> None:
        self.queue = FakeQueue()
        self.prefetch = 0
        self.is_closed = False

    async def set_qos(self, prefetch_count: int) -> None:
        self.prefetch = prefetch_count

    async def declare_queue(self, name: str, durable: bool, arguments: dict[str, Any]) -> FakeQueue:
        return self.queue

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

    def __init__(self, verdict: Callable[[Delivery], bool] = lambda d: True, fail: bool = False) -> None:
        self.batches: list[list[str | None]] = []
        self._verdict = verdict
        self._fail = fail
        self.release = asyncio.Event()
        self.release.set()

    async def __call__(self, deliveries: Sequence[Delivery]) -> list[bool]:
        await self.release.wait()
        self.batches.append([d.message_id for d in deliveries])
        if self._fail:
            raise RuntimeError("a bug in the processor")
        return [self._verdict(d) for d in deliveries]


@pytest.fixture(autouse=True)
def no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker_module, "REQUEUE_PAUSE_SECONDS", 0.0)


async def _started(process: ProcessBatch, max_batch: int = 100, workers: int = 1) -> tuple[QueueWorkers, FakeChannel]:
    connection = FakeConnection()
    worker = QueueWorkers(connection, "payments.work.free", {}, workers, 64, max_batch, process, BODIES)  # type: ignore[arg-type]
    await worker.start()
    return worker, connection.channels[0]


async def _deliver(channel: FakeChannel, tags: range, settlements: list[tuple[str, int, bool]]) -> None:
    assert channel.queue.callback is not None
    for tag in tags:
        await channel.queue.callback(FakeMessage(tag, settlements))


async def _idle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_settled_batch_is_acked_once_with_multiple() -> None:
    process = Recorder()
    process.release.clear()  # hold the first batch so the rest arrive together
    settlements: list[tuple[str, int, bool]] = []
    worker, channel = await _started(process)
    assert channel.prefetch == 64
    assert worker.running == 1
    await _deliver(channel, range(1, 2), settlements)
    await _idle()
    await _deliver(channel, range(2, 6), settlements)
    process.release.set()
    await _idle()
    assert process.batches == [["m-1"], ["m-2", "m-3", "m-4", "m-5"]]
    assert settlements == [("ack", 1, True), ("ack", 5, True)]
    await worker.stop()


async def test_an_unsettled_delivery_goes_back_before_a_multiple_ack_passes_it() -> None:
    process = Recorder(verdict=lambda d: d.message_id != "m-3")
    process.release.clear()
    settlements: list[tuple[str, int, bool]] = []
    worker, channel = await _started(process)
    await _deliver(channel, range(1, 6), settlements)
    process.release.set()
    await _idle()
    assert process.batches == [["m-1", "m-2", "m-3", "m-4", "m-5"]]
    # The nack leaves first, so tag 3 is no longer unacked when ack(5, multiple) reaches the broker.
    assert settlements == [("nack", 3, True), ("ack", 5, True)]
    await worker.stop()


async def test_a_processing_bug_acks_nothing() -> None:
    process = Recorder(fail=True)
    settlements: list[tuple[str, int, bool]] = []
    worker, channel = await _started(process)
    await _deliver(channel, range(1, 4), settlements)
    await _idle()
    assert settlements
    assert all(kind == "nack" for kind, _, _ in settlements)
    assert worker.running, "a bug in one batch must not stop the worker"
    await worker.stop()


async def test_batches_are_capped_and_stop_settles_what_arrived() -> None:
    process = Recorder()
    process.release.clear()
    settlements: list[tuple[str, int, bool]] = []
    worker, channel = await _started(process, max_batch=2)
    await _deliver(channel, range(1, 6), settlements)
    stopping = asyncio.create_task(worker.stop())
    await _idle()
    assert channel.queue.cancelled, "stop takes no more deliveries first"
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


def _messages(tags: range, settlements: list[tuple[str, int, bool]], channel: object) -> list[Any]:
    return [FakeMessage(tag, settlements, channel) for tag in tags]


async def test_out_of_order_batches_ack_only_the_settled_head() -> None:
    settlements: list[tuple[str, int, bool]] = []
    tracker = Settlements()
    first, second = _messages(range(1, 4), settlements, "ch"), _messages(range(4, 7), settlements, "ch")
    for message in first + second:
        tracker.delivered(message)
    await tracker.settle(second, [True, True, True])
    assert settlements == [], "tags 1-3 are still open: acking 6 with multiple would cover them"
    await tracker.settle(first, [True, False, True])
    assert settlements == [("nack", 2, True), ("ack", 6, True)]


async def test_a_new_channel_starts_over() -> None:
    settlements: list[tuple[str, int, bool]] = []
    tracker = Settlements()
    old = _messages(range(1, 3), settlements, "old")
    for message in old:
        tracker.delivered(message)
    new = _messages(range(1, 3), settlements, "new")  # after a reconnection tags restart at 1
    for message in new:
        tracker.delivered(message)
    await tracker.settle(old, [True, True])
    assert settlements == [], "the old channel is gone; its tags mean nothing on the new one"
    await tracker.settle(new, [True, True])
    assert settlements == [("ack", 2, True)]


async def test_a_body_over_the_cap_is_cut_to_its_prefix_on_arrival() -> None:
    seen: list[Delivery] = []

    async def keep(deliveries: Sequence[Delivery]) -> list[bool]:
        seen.extend(deliveries)
        return [True] * len(deliveries)

    settlements: list[tuple[str, int, bool]] = []
    worker, channel = await _started(keep)
    assert channel.queue.callback is not None
    bodies = {1: b"a" * 65_536, 2: b"b" * 65_537, 3: b"c" * 20 * 1024 * 1024}
    messages = {tag: FakeMessage(tag, settlements) for tag in bodies}
    for tag, message in messages.items():
        message.body = bodies[tag]
        await channel.queue.callback(message)
    await _idle()
    assert [len(d.body) for d in seen] == [65_536, 4096, 4096]
    assert seen[0].truncated is None
    for delivery, tag in zip(seen[1:], (2, 3), strict=True):
        assert delivery.truncated == Truncated(len(bodies[tag]), hashlib.sha256(bodies[tag]).hexdigest())
        assert delivery.body == bodies[tag][:4096]
        assert delivery.size == len(bodies[tag])
        assert messages[tag].body == delivery.body, "the original bytes are not kept by the message either"
    await worker.stop()


@pytest.mark.parametrize(
    ("pool_bytes", "window"),
    [(64 * 1024 * 1024, 64), (16 * 65_536, 16), (16 * 65_536 - 1, 15), (1, 1)],
)
def test_a_pools_window_never_holds_more_bytes_than_its_budget(pool_bytes: int, window: int) -> None:
    bodies = BodyLimits(cap=65_536, prefix=4096, pool_bytes=pool_bytes)
    assert bodies.window(64) == window

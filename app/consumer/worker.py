"""A pool's workers on one queue: one AMQP consumer (one channel) feeding N batch loops.

FastStream's subscriber spends a task, a dependency-resolution pass and an ack frame on every message,
which measured at a fifth of the broker's consume ceiling here (docs/benchmarks.md); N consumers with
their own channels cost a third more than one channel with the same window. So a pool has one consumer
with a window of `prefetch x workers`, and a worker is one batch in flight: a dispatcher hands whatever
has arrived to a free worker (natural batching: one message at low load, a full batch under pressure; under
a steady moderate load, at most one batch per batch interval, so batches grow with the rate);
the worker gives it to the processor (one group commit) and reports it settled. Acks go out as one
`basic.ack(multiple)` for the longest run of settled deliveries at the head of the channel (see
Settlements), never covering an unsettled one.

Deliveries are consumed with aiormq's `basic_consume` on the channel under aio-pika's robust one (its public
`get_underlay_channel()`): aio-pika's `IncomingMessage` costs more CPU than the checks remit makes
(docs/benchmarks.md, "Consumer"). So this module owns what aio-pika's queue did for a consumer: it consumes
again on the new channel after a reconnection (the robust channel's reopen callback), and a consumer the broker
cancelled (its queue deleted) leaves the pool not running, for the pool manager's next sync to start it again.
aiormq starts the callback of each delivery as a task, in the order the deliveries arrive; the callback takes
the delivery before it first waits, so the buffer keeps that order (the order the settlements need).

Bytes are bounded as well as deliveries: a body over the hard cap is cut to a prefix the moment it
arrives (its length and SHA-256 kept, the original dropped), and a pool's window is never more
deliveries than its byte budget allows (BodyLimits). Lowering basic.qos would not do: RabbitMQ applies a
new prefetch only to consumers started after it, and quorum queues refuse a channel-wide (global) one.
"""

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import uuid4

from aio_pika.abc import AbstractRobustChannel as Channel
from aio_pika.abc import AbstractRobustConnection
from aiormq.abc import AbstractChannel as Underlay
from aiormq.abc import DeliveredMessage
from pamqp import commands as spec
from pamqp.header import ContentHeader

from app.consumer.delivery import BodyLimits, Delivery, Truncated, Trusts, trusts_nobody
from app.messaging.lenient_properties import Unreadable
from app.observability.live_queues import Taken
from app.observability.metrics import ObserveStage, ignore_stage

log = logging.getLogger("remit.consumer")

ProcessBatch = Callable[[Sequence[Delivery]], Awaitable[list[bool]]]
Receipt = tuple[Underlay, int]  # the channel a delivery came on, and its delivery tag there

# When even a failure could not be recorded (database down), pause before the deliveries go back to the
# queue so an outage is not a hot redelivery loop; the quorum delivery limit is the backstop.
REQUEUE_PAUSE_SECONDS = 1.0


class Settlements:
    """Which deliveries of a channel are settled; acks the settled head of the channel at once.

    RabbitMQ numbers a channel's deliveries 1, 2, 3...; `ack(multiple)` on tag T settles every unacked
    tag up to T. Workers finish batches out of order, so only the run of settled tags at the head may be
    acked together. A delivery that must go back is nacked on its own at once, and counts as settled.
    After a reconnection the channel is new and numbers from 1 again: what the old one held is gone
    (the broker requeued it), so tracking starts over.
    """

    def __init__(self) -> None:
        self._channel: Underlay | None = None
        self._unsettled: dict[int, None] = {}  # tags in delivery order
        self._settled: dict[int, bool] = {}  # tag -> acked (False: nacked)
        # Frames must leave in tag order: an ack(multiple) for a lower tag after a higher one would name
        # a tag the broker no longer knows, and it closes the channel for that.
        self._lock = asyncio.Lock()

    def delivered(self, channel: Underlay, tag: int) -> None:
        if channel is not self._channel:
            self._channel = channel
            self._unsettled.clear()
            self._settled.clear()
        self._unsettled[tag] = None

    async def settle(self, batch: Sequence[Receipt], settled: Sequence[bool]) -> None:
        async with self._lock:
            await self._settle(batch, settled)

    async def _settle(self, batch: Sequence[Receipt], settled: Sequence[bool]) -> None:
        channel = self._channel
        for (came_on, tag), ok in zip(batch, settled, strict=True):
            # The same channel, not just the same tag: a new channel numbers its deliveries from 1 again.
            if came_on is not channel or tag not in self._unsettled:
                continue  # from a channel that is gone: the broker has it back already
            if not ok:
                await came_on.basic_nack(tag, requeue=True)  # if this raises, the delivery stays unsettled
            self._settled[tag] = ok
        head: int | None = None
        for tag in list(self._unsettled):
            if tag not in self._settled:
                break
            del self._unsettled[tag]
            if self._settled.pop(tag):
                head = tag
        if head is not None and channel is not None:
            await channel.basic_ack(head, multiple=True)


class QueueWorkers:
    def __init__(
        self,
        connection: AbstractRobustConnection,
        queue: str,
        queue_arguments: Mapping[str, Any] | None,
        workers: int,
        prefetch: int,
        max_batch: int,
        process: ProcessBatch,
        bodies: BodyLimits,
        observe: ObserveStage = ignore_stage,
        trusts: Trusts = trusts_nobody,
        batch_interval: float = 0.0,
    ) -> None:
        self.queue_name = queue
        self._observe = observe
        self._trusts = trusts
        self.size = max(1, workers)
        self._connection = connection
        self._arguments = dict(queue_arguments) if queue_arguments is not None else None
        self._bodies = bodies
        self._prefetch = bodies.window(prefetch * self.size)
        self._max_batch = max(1, max_batch)
        self._process = process
        self._buffer: list[Receipt] = []
        self._deliveries: list[Delivery] = []  # what the processor gets, one per buffered message
        self._arrivals: list[float] = []  # arrival time (epoch seconds) of each buffered delivery
        self._arrived = asyncio.Event()
        self._full = asyncio.Event()  # a full batch is buffered: a linger ends early
        self._interval = batch_interval
        self._last_start = -batch_interval  # monotonic time the last batch began
        self._settlements = Settlements()
        self._stopping = False
        self._slots = asyncio.Semaphore(self.size)  # a worker = one batch in flight
        self._dispatcher: asyncio.Task[None] | None = None
        self._batches: set[asyncio.Task[None]] = set()
        self._in_flight = 0
        self._channel: Channel | None = None
        self._consumer: tuple[Underlay, str] | None = None  # the channel consumed on, and the consumer tag
        self._lost = False  # the broker cancelled the consumer, or consuming again after a reconnection failed
        self._newest: tuple[datetime | None, float] | None = None  # the last delivery's timestamp, its arrival

    @property
    def newest(self) -> Taken | None:
        """The newest message taken from the queue (the queue gauges' age of a queue that flows)."""
        return None if self._newest is None else Taken(*self._newest)

    @property
    def running(self) -> int:
        """Workers able to take a batch: all of them while the pool runs, none when it is stopped."""
        alive = self._dispatcher is not None and not self._dispatcher.done() and not self._lost
        return self.size if alive else 0

    async def start(self) -> None:
        if self.running:
            return
        await self.stop()  # what a lost consumer left: its dispatcher, its batches, its channel
        self._stopping = self._lost = False
        self._channel = channel = await self._connection.channel()
        await channel.set_qos(prefetch_count=self._prefetch)
        await self._declare(channel)
        self._dispatcher = asyncio.create_task(self._dispatch(), name=f"workers:{self.queue_name}")
        channel.reopen_callbacks.add(self._consume_again)
        await self._consume()

    async def _declare(self, channel: Channel) -> None:
        """Declare the queue (no arguments: look it up, passively, and fail if it is gone). The robust
        channel declares it again after a reconnection."""
        if self._arguments is None:
            await channel.get_queue(self.queue_name, ensure=True)
        else:
            await channel.declare_queue(self.queue_name, durable=True, arguments=self._arguments)

    async def _consume(self) -> None:
        assert self._channel is not None
        underlay = await self._channel.get_underlay_channel()
        underlay.on_consumer_cancel_callbacks.add(self._cancelled)
        tag = f"remit:{self.queue_name}:{uuid4().hex}"
        await underlay.basic_consume(self.queue_name, self._on_message, no_ack=False, consumer_tag=tag)
        self._consumer = (underlay, tag)

    async def _consume_again(self, _channel: object) -> None:
        """The robust channel reopened (a reconnection): its new aiormq channel has no consumer yet."""
        if self._stopping:
            return
        try:
            await self._consume()
        except Exception:  # the queue is gone, or the connection again: the next pool sync starts over
            self._lost = True
            log.warning("consuming %s again after a reconnection failed", self.queue_name, exc_info=True)

    def _cancelled(self, frame: Any) -> None:
        """The broker cancelled a consumer (its queue was deleted): if ours, the pool stops running."""
        if self._consumer is not None and frame.consumer_tag == self._consumer[1]:
            self._lost = True
            log.warning("RabbitMQ cancelled the consumer on %s", self.queue_name)

    async def stop(self) -> None:
        """Take no more deliveries, settle the ones that arrived, then close the channel."""
        if self._channel is not None:
            self._channel.reopen_callbacks.discard(self._consume_again)
        if self._consumer is not None:
            underlay, tag = self._consumer
            self._consumer = None
            try:
                await underlay.basic_cancel(tag)
            except Exception:  # the channel is gone already: its deliveries went back to the queue
                log.debug("cancelling the consumer on %s failed", self.queue_name, exc_info=True)
        self._stopping = True
        self._arrived.set()
        self._full.set()
        if self._dispatcher is not None:
            await asyncio.gather(self._dispatcher, return_exceptions=True)
            self._dispatcher = None
        await asyncio.gather(*self._batches, return_exceptions=True)
        if self._channel is not None and not self._channel.is_closed:
            await self._channel.close()
        self._channel = None

    async def _on_message(self, message: DeliveredMessage) -> None:
        deliver = message.delivery
        assert isinstance(deliver, spec.Basic.Deliver), "a consumer gets Basic.Deliver frames"
        self._take(message.channel, deliver, message.header, message.body)

    def _take(self, channel: Underlay, deliver: spec.Basic.Deliver, header: ContentHeader, body: bytes) -> None:
        # The oversize original is dropped here, before anything buffers it: only the Delivery is kept.
        body, truncated = self._bodies.keep(body)
        tag = deliver.delivery_tag
        assert tag is not None, "a consumer's deliveries are numbered"
        self._settlements.delivered(channel, tag)
        self._buffer.append((channel, tag))
        self._deliveries.append(_delivery(deliver, header, self.queue_name, body, truncated))
        arrived = time.time()
        self._arrivals.append(arrived)
        self._newest = (header.properties.timestamp, arrived)
        self._arrived.set()
        if len(self._buffer) >= self._max_batch:
            self._full.set()

    async def _dispatch(self) -> None:
        # One dispatcher, not N waiting loops: a delivery wakes one task. An idle pool takes what has
        # arrived at once (latency); another worker joins only for a full batch (throughput: small
        # batches in parallel cost more CPU than they save in waiting, measured in docs/benchmarks.md).
        while self._buffer or not self._stopping:
            if not self._buffer or (self._in_flight and len(self._buffer) < self._max_batch and not self._stopping):
                self._arrived.clear()
                await self._arrived.wait()
                continue
            if await self._lingered():
                continue
            await self._slots.acquire()
            self._last_start = time.monotonic()
            batch, deliveries = self._buffer[: self._max_batch], self._deliveries[: self._max_batch]
            del self._buffer[: self._max_batch], self._deliveries[: self._max_batch]
            self._observe_arrival(deliveries[0], self._arrivals[0])
            del self._arrivals[: self._max_batch]
            self._in_flight += 1
            task = asyncio.create_task(self._settle(batch, deliveries))
            self._batches.add(task)
            task.add_done_callback(self._batches.discard)

    async def _lingered(self) -> bool:
        """Under steady load, wait out what is left of the batch interval since the last batch began (or until a
        full batch is buffered); a pool idle for an interval starts at once. Each batch has a fixed cost
        (a transaction and its round trips, PostgreSQL's share, the ack): at a moderate rate a batch per
        delivery or two cost the consumer and PostgreSQL more CPU than the messages themselves, and on a
        host they share with the broker that CPU showed up as the broker's tail (docs/benchmarks.md,
        "Latency"). At most one interval is added to a message's wait; True: the dispatcher looks again."""
        linger = self._last_start + self._interval - time.monotonic()
        if linger <= 0 or self._stopping or len(self._buffer) >= self._max_batch:
            return False
        self._full.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._full.wait(), linger)
        return True

    def _observe_arrival(self, oldest: Delivery, arrived: float) -> None:
        self._observe("buffered", time.time() - arrived)
        published = oldest.published_at(self._trusts)
        if published is not None:
            self._observe("delivered", max(arrived - published, 0.0))  # publish to our callback

    async def _settle(self, batch: list[Receipt], deliveries: list[Delivery]) -> None:
        try:
            await self._settle_batch(batch, deliveries)
        finally:
            self._in_flight -= 1
            self._slots.release()
            self._arrived.set()  # a worker is free: the dispatcher may take a smaller batch now

    async def _settle_batch(self, batch: list[Receipt], deliveries: list[Delivery]) -> None:
        started = time.monotonic()
        settled = await self._processed(deliveries)
        processed = time.monotonic()
        self._observe("processing", processed - started)
        try:
            if not all(settled):
                await asyncio.sleep(REQUEUE_PAUSE_SECONDS)
            await self._settlements.settle(batch, settled)
            self._observe("settle", time.monotonic() - processed)
        except Exception:  # the channel closed under us: the broker redelivers, the ledger dedups
            log.warning("could not settle %d deliveries from %s", len(batch), self.queue_name, exc_info=True)

    async def _processed(self, deliveries: list[Delivery]) -> list[bool]:
        """The processor's verdicts. Should it raise (a bug: it settles every bad message itself), each delivery
        is processed again alone, so that only the one it raises for goes back to the queue: another tenant's
        delivery in the same batch is neither delayed nor counted towards its delivery limit (bulkheads,
        docs/architecture.md). A delivery committed before the raise is a duplicate the second time."""
        try:
            return await self._process(deliveries)
        except Exception:
            log.exception("processing a batch of %d from %s failed", len(deliveries), self.queue_name)
        if len(deliveries) == 1:
            return [False]
        return [ok for delivery in deliveries for ok in await self._processed([delivery])]


def _delivery(
    deliver: spec.Basic.Deliver, header: ContentHeader, queue: str, body: bytes, truncated: Truncated | None
) -> Delivery:
    properties = header.properties
    headers = properties.headers or {}
    unreadable = Unreadable.taken_from(headers)
    return Delivery(
        body=body,
        queue=queue,
        headers=headers,
        content_type=properties.content_type,
        message_id=properties.message_id,
        user_id=properties.user_id,
        redelivered=bool(deliver.redelivered),
        routing_key=deliver.routing_key,
        truncated=truncated,
        unreadable=unreadable,
    )

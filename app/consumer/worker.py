"""A queue worker: one AMQP consumer on its own channel that settles its deliveries in batches.

FastStream's subscriber spends a task, a dependency-resolution pass and an ack frame on every message,
which measured at a fifth of the broker's consume ceiling here (docs/benchmarks.md). A worker takes
whatever the broker has delivered since its last batch (natural batching: one message at low load, a
full batch under pressure), hands it to the processor (one group commit), and acks it with a single
`basic.ack(multiple)` only once every message in it is settled. Deliveries are settled in order on the
worker's channel, so "every tag up to this one" never covers an unsettled message.
"""

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from aio_pika.abc import AbstractChannel, AbstractConnection, AbstractIncomingMessage, AbstractQueue

from app.consumer.delivery import Delivery

log = logging.getLogger("remit.consumer")

ProcessBatch = Callable[[Sequence[Delivery]], Awaitable[list[bool]]]

# When even a failure could not be recorded (database down), pause before the deliveries go back to the
# queue so an outage is not a hot redelivery loop; the quorum delivery limit is the backstop.
REQUEUE_PAUSE_SECONDS = 1.0


class QueueWorker:
    def __init__(
        self,
        connection: AbstractConnection,
        queue: str,
        queue_arguments: Mapping[str, Any] | None,
        prefetch: int,
        max_batch: int,
        process: ProcessBatch,
    ) -> None:
        self.queue_name = queue
        self._connection = connection
        self._arguments = dict(queue_arguments) if queue_arguments is not None else None
        self._prefetch = prefetch
        self._max_batch = max(1, max_batch)
        self._process = process
        self._buffer: list[AbstractIncomingMessage] = []
        self._arrived = asyncio.Event()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self._channel: AbstractChannel | None = None
        self._consumer: tuple[AbstractQueue, str] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        if self.running:
            return
        self._stopping = False
        self._channel = await self._connection.channel()
        await self._channel.set_qos(prefetch_count=self._prefetch)
        queue = await self._queue(self._channel)
        self._task = asyncio.create_task(self._run(), name=f"worker:{self.queue_name}")
        self._consumer = (queue, await queue.consume(self._on_message))

    async def _queue(self, channel: AbstractChannel) -> AbstractQueue:
        """Declare the queue (no arguments: look it up, passively, and fail if it is gone)."""
        if self._arguments is None:
            return await channel.get_queue(self.queue_name, ensure=True)
        return await channel.declare_queue(self.queue_name, durable=True, arguments=self._arguments)

    async def stop(self) -> None:
        """Take no more deliveries, settle the ones that arrived, then close the channel."""
        if self._consumer is not None:
            queue, tag = self._consumer
            self._consumer = None
            try:
                await queue.cancel(tag)
            except Exception:  # the channel is gone already: its deliveries went back to the queue
                log.debug("cancelling the consumer on %s failed", self.queue_name, exc_info=True)
        self._stopping = True
        self._arrived.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        if self._channel is not None and not self._channel.is_closed:
            await self._channel.close()
        self._channel = None

    async def _on_message(self, message: AbstractIncomingMessage) -> None:
        self._buffer.append(message)
        self._arrived.set()

    async def _run(self) -> None:
        while self._buffer or not self._stopping:
            if not self._buffer:
                self._arrived.clear()
                await self._arrived.wait()
                continue
            batch = self._buffer[: self._max_batch]
            del self._buffer[: self._max_batch]
            await self._settle(batch)

    async def _settle(self, batch: list[AbstractIncomingMessage]) -> None:
        try:
            settled = await self._process([_delivery(m, self.queue_name) for m in batch])
        except Exception:  # a bug, not a bad message: nothing in the batch may be acked
            log.exception("processing a batch of %d from %s failed", len(batch), self.queue_name)
            settled = [False] * len(batch)
        try:
            if all(settled):
                await batch[-1].ack(multiple=True)
                return
            await asyncio.sleep(REQUEUE_PAUSE_SECONDS)
            for message, ok in zip(batch, settled, strict=True):
                await (message.ack() if ok else message.nack(requeue=True))
        except Exception:  # the channel closed under us: the broker redelivers, the ledger dedups
            log.warning("could not settle %d deliveries from %s", len(batch), self.queue_name, exc_info=True)


def _delivery(message: AbstractIncomingMessage, queue: str) -> Delivery:
    return Delivery(
        body=message.body,
        queue=queue,
        headers=message.headers or {},
        content_type=message.content_type,
        message_id=message.message_id,
        user_id=message.user_id,
        redelivered=bool(message.redelivered),
        routing_key=message.routing_key,
    )

"""The outbox relay: publishes accepted payments with broker confirms and marks them published after.

One relay is active at a time (app/publisher/leadership.py: an advisory lock, re-checked before every
cycle; others wait as standbys), which is what lets it promise first delivery in submission order per
batch. A crash between publish and mark means the rows are published again on restart: a duplicate the
idempotent consumer absorbs, never a loss.

A cycle publishes its whole batch at once and marks the rows in chunks of MARK_EVERY, each chunk once all of
its confirms are in, in the cycle's one transaction: the database marks while the broker confirms the later
chunks (with one UPDATE after the last confirm, the broker idled through every cycle's database work). A
mark is durable only at the commit after the last confirm, so a crash anywhere in the cycle republishes.

Fair share (app/publisher/fair_selection.py): each cycle takes an equal share of rows per tenant,
round-robin, and with `queue_depths` skips tenants whose work queue is above the high-watermark, so a
flooding tenant's backlog waits in the outbox instead of in front of a quiet tenant in a shared tier queue.
`fair=False` is the old FIFO relay (outbox_id order, no backpressure), kept for comparison.

When a cycle fails (RabbitMQ or PostgreSQL away) the relay backs off with jitter, up to a try every 10 s,
and logs the outage once, not once per try (app/observability/outage.py). A refusal of one message (nacked
or unroutable) is that row's problem, not an outage: the row stays in the outbox, the others go on, and it
is tried again after a backoff (1 s doubling to 60 s, counted on the row: `publish_refusals`,
`next_publish_at`), so refused rows never hold every place of a cycle; /readyz and `remit status` count them
(app/observability/relay_health.py).
"""

import asyncio
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, cast

import aiormq
from aio_pika.abc import AbstractChannel, AbstractExchange
from aio_pika.exceptions import DeliveryError
from prometheus_client import Counter
from sqlalchemy import BigInteger, Row, any_, bindparam, func, literal_column, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.messaging import headers
from app.messaging.properties import OutboundPayment, amqp_properties
from app.messaging.topology import routing_key
from app.observability.outage import Outage
from app.publisher.fair_selection import QueueDepths, due, fair_rows, pending_tenants
from app.publisher.leadership import HANDOVER_SECONDS, ONE_CYCLE_AT_A_TIME, Leadership, sleep_unless
from app.storage.tables import outbox
from app.storage.unit_of_work import SYSTEM, SqlUnitOfWork

log = logging.getLogger("remit.relay")
# The relay's own process metrics (`REMIT_RELAY_METRICS_PORT`): confirmed and failed publishes.
PUBLISH_CONFIRMS = Counter("remit_publish_confirms", "Outbox publishes the broker confirmed or refused", ["result"])
REFUSAL_BACKOFF_CAP_SECONDS = 60  # a refused row is tried again after 1 s, 2 s, 4 s, ... then every minute
# Rows marked per UPDATE as their confirms arrive (bench/relay_bench.py): small enough that the database
# marks while the broker confirms the rest of the batch, big enough that an UPDATE is not a round trip a row.
MARK_EVERY = 100


class OutboxRelay:
    def __init__(
        self,
        engine: AsyncEngine,
        channel: AbstractChannel,
        exchange_name: str,
        user_id: str,
        batch_size: int,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        after_publish: Callable[[], None] = lambda: None,
        *,
        fair: bool = True,
        queue_depths: QueueDepths | None = None,
        throttle_pause: float = 0.02,
    ) -> None:
        self._after_publish = after_publish
        self._fair = fair
        self._queue_depths = queue_depths if fair else None
        self._throttle_pause = throttle_pause
        self._throttled = False  # the last cycle skipped a tenant for backpressure
        self._engine = engine
        self._channel = channel
        self._exchange_name = exchange_name
        self._user_id = user_id
        self._batch_size = batch_size
        self._clock = clock
        self._exchange: AbstractExchange | None = None
        self._outage = Outage("relay cycle", log)
        self._refused: set[Any] = set()  # message_ids whose refusal was logged: once each, not every cycle

    async def relay_once(self, leadership: Leadership | None = None) -> int:
        """Publish one batch of unpublished rows; return how many were confirmed. Given the leadership, the
        cycle first makes sure this relay still leads, and publishes nothing when it does not."""
        exchange = await self._get_exchange()
        async with SqlUnitOfWork(self._engine, SYSTEM) as uow:  # the relay works for every tenant
            await uow.connection.execute(ONE_CYCLE_AT_A_TIME)
            if leadership is not None and not await leadership.check():
                return 0
            rows = await self._select(uow.connection)
            if not rows:
                return 0
            confirmed, outage = await self._publish_and_mark(uow.connection, exchange, rows)
            self._after_publish()  # every confirm is in; no mark is committed yet
            await uow.commit()
        if outage is not None:
            raise outage  # the broker, not a message: the rows it did not confirm wait for the next cycle
        return confirmed

    async def run(self, stop: asyncio.Event, poll_seconds: float) -> None:
        """Wait for leadership, publish while leading, and wait again whenever it is lost, until `stop`."""
        leadership = Leadership(self._engine)
        try:
            while await leadership.acquire(stop):
                log.info("relay is active")
                await self._lead(leadership, stop, poll_seconds)
                if leadership.lost:
                    log.warning("relay lost its leadership (its lock connection is gone); waiting as a standby")
                    await sleep_unless(stop, HANDOVER_SECONDS)
        finally:
            await leadership.release()

    async def _lead(self, leadership: Leadership, stop: asyncio.Event, poll_seconds: float) -> None:
        while not stop.is_set() and not leadership.lost:
            published = await self._relay_or_back_off(leadership, stop)
            if published == 0 and not leadership.lost:  # idle, or every pending tenant throttled
                await sleep_unless(stop, self._throttle_pause if self._throttled else poll_seconds)

    async def _relay_or_back_off(self, leadership: Leadership, stop: asyncio.Event) -> int | None:
        """One cycle: how many were published, or None after a failed cycle and the backoff that followed."""
        try:
            published = await self.relay_once(leadership)
        except Exception as exc:
            await sleep_unless(stop, self._outage.failed(exc))
            return None
        self._outage.worked()
        return published

    async def _select(self, conn: AsyncConnection) -> Sequence[Row[Any]]:
        if not self._fair:
            return (await conn.execute(_next_rows(self._batch_size))).all()
        pending = await pending_tenants(conn)
        throttled = await self._queue_depths.throttled(pending) if self._queue_depths else set()
        self._throttled = bool(throttled)
        eligible = [p.tenant_id for p in pending if p.tenant_id not in throttled]
        return await fair_rows(conn, eligible, self._batch_size)

    async def _get_exchange(self) -> AbstractExchange:
        if self._exchange is None:
            self._exchange = await self._channel.get_exchange(self._exchange_name, ensure=True)
        return self._exchange

    async def _publish_and_mark(
        self, conn: AsyncConnection, exchange: AbstractExchange, rows: Sequence[Row[Any]]
    ) -> tuple[int, BaseException | None]:
        """Publish every row at once, then mark the rows chunk by chunk, each chunk as soon as all of its
        confirms are in: the UPDATEs run while the broker still confirms the later chunks, instead of
        after the last confirm with the broker idle. Return how many were confirmed, and the first failure
        that was the broker's rather than a message's (its rows are neither marked nor deferred: they are
        tried again next cycle)."""
        now = self._clock()
        stamp = {headers.PUBLISHED_AT: int(now.timestamp() * 1000)}
        # aio-pika's publish waits for each frame to reach the socket before the next publish may start; the
        # underlying channel's `wait=False` queues them back to back. Each still awaits its broker confirm.
        channel = cast(aiormq.Channel, await self._channel.get_underlay_channel())  # `wait` is aiormq.Channel's
        sends = [
            asyncio.ensure_future(
                channel.basic_publish(
                    row.body,
                    exchange=exchange.name,
                    routing_key=routing_key(row.tenant_id),
                    properties=amqp_properties(_outbound(row), now, self._user_id, stamp),
                    mandatory=True,
                    wait=False,
                )
            )
            for row in rows
        ]
        confirmed = 0
        outage: BaseException | None = None
        try:
            for start in range(0, len(rows), MARK_EVERY):
                chunk = slice(start, start + MARK_EVERY)
                results = await asyncio.gather(*sends[chunk], return_exceptions=True)
                done, refused, failure = self._sort(rows[chunk], results)
                outage = outage or failure
                if done:
                    await _mark_published(conn, done, self._clock())
                if refused:
                    await _defer(conn, refused)
                confirmed += len(done)
        finally:  # a failed UPDATE leaves no publish behind unawaited
            await asyncio.gather(*sends, return_exceptions=True)
        return confirmed, outage

    def _sort(
        self, rows: Sequence[Row[Any]], results: Sequence[object]
    ) -> tuple[list[int], list[int], BaseException | None]:
        """The confirmed and the refused rows' outbox ids, and the first failure that was the broker's."""
        confirmed: list[int] = []
        refused: list[int] = []
        outage = None
        for row, result in zip(rows, results, strict=True):
            if not isinstance(result, BaseException):
                confirmed.append(row.outbox_id)
                continue
            PUBLISH_CONFIRMS.labels("failed").inc()
            if isinstance(result, DeliveryError):  # nacked or returned: this message, not the broker
                self._log_refusal(row, result)
                refused.append(row.outbox_id)
            else:
                outage = outage or result
        PUBLISH_CONFIRMS.labels("confirmed").inc(len(confirmed))
        return confirmed, refused, outage

    def _log_refusal(self, row: Row[Any], error: BaseException) -> None:
        # An unroutable row (its tenant has no binding) is refused at every try until someone fixes the route:
        # one ERROR per message, then quiet (the metric still counts every refusal).
        if row.message_id in self._refused:
            return
        if len(self._refused) >= 10_000:
            self._refused.clear()
        self._refused.add(row.message_id)
        log.error(
            "publish of %s refused, will retry with backoff (logged once): %r",
            row.message_id,
            error,
            extra={"tenant_id": row.tenant_id, "message_id": str(row.message_id)},
        )


def _next_rows(limit: int) -> Any:
    return select(outbox).where(due()).order_by(outbox.c.outbox_id).limit(limit).with_for_update(skip_locked=True)


def _outbound(row: Row[Any]) -> OutboundPayment:
    return OutboundPayment(
        message_id=row.message_id,
        correlation_id=row.correlation_id,
        tenant_id=row.tenant_id,
        timestamp=row.accepted_at,
        expires_at=row.expires_at,
        body=row.body,
    )


# One array parameter, not an IN list of one parameter per row: one statement text for every chunk size.
_IDS = outbox.c.outbox_id == any_(bindparam("ids", type_=ARRAY(BigInteger)))
_MARK = update(outbox).where(_IDS).values(published_at=bindparam("at"))


async def _mark_published(conn: AsyncConnection, outbox_ids: list[int], now: datetime) -> None:
    await conn.execute(_MARK, {"ids": outbox_ids, "at": now})


def _defer_statement() -> Any:
    """Count a refusal on each row and set its next try: 2^refusals seconds, capped (the database's clock)."""
    wait = func.least(REFUSAL_BACKOFF_CAP_SECONDS, func.power(2, func.least(outbox.c.publish_refusals, 10)))
    return (
        update(outbox)
        .where(_IDS)
        .values(
            publish_refusals=outbox.c.publish_refusals + 1,
            next_publish_at=func.now() + wait * literal_column("interval '1 second'"),
        )
    )


_DEFER = _defer_statement()


async def _defer(conn: AsyncConnection, outbox_ids: list[int]) -> None:
    await conn.execute(_DEFER, {"ids": outbox_ids})

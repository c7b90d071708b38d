"""The outbox relay: publishes accepted payments with broker confirms and marks them published after.

One relay is active at a time (a PostgreSQL advisory lock; others wait as standbys), which is what lets
it promise first delivery in submission order per batch. A crash between publish and mark means the
rows are published again on restart: a duplicate the idempotent consumer absorbs, never a loss.

Fair share (app/publisher/fair_selection.py): each cycle takes an equal share of rows per tenant,
round-robin, and with `queue_depths` skips tenants whose work queue is above the high-watermark, so a
flooding tenant's backlog waits in the outbox instead of in front of a quiet tenant in a shared tier queue.
`fair=False` is the old FIFO relay (outbox_id order, no backpressure), kept for comparison.
"""

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from aio_pika.abc import AbstractChannel, AbstractExchange
from prometheus_client import Counter
from sqlalchemy import Row, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.messaging import headers
from app.messaging.properties import OutboundPayment, amqp_message
from app.messaging.topology import routing_key
from app.publisher.fair_selection import QueueDepths, fair_rows, pending_tenants
from app.storage.tables import outbox
from app.storage.unit_of_work import SYSTEM, SqlUnitOfWork

log = logging.getLogger("remit.relay")
# The relay's own process metrics (`REMIT_RELAY_METRICS_PORT`): confirmed and failed publishes.
PUBLISH_CONFIRMS = Counter("remit_publish_confirms", "Outbox publishes the broker confirmed or refused", ["result"])

RELAY_LOCK_KEY = 0x72656D6974  # "remit": one advisory lock id for the relay leadership


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

    async def relay_once(self) -> int:
        """Publish one batch of unpublished rows; return how many were confirmed."""
        exchange = await self._get_exchange()
        async with SqlUnitOfWork(self._engine, SYSTEM) as uow:  # the relay works for every tenant
            rows = await self._select(uow.connection)
            if not rows:
                return 0
            confirmed = await self._publish(exchange, rows)
            self._after_publish()
            if confirmed:
                await _mark_published(uow.connection, confirmed, self._clock())
            await uow.commit()
        return len(confirmed)

    async def run(self, stop: asyncio.Event, poll_seconds: float) -> None:
        async with self._engine.connect() as lock_conn:
            await _wait_for_leadership(lock_conn, stop)
            log.info("relay is active")
            while not stop.is_set():
                published = await self._relay_or_pause(poll_seconds)
                if published == 0:  # idle, or every pending tenant throttled: then only a short pause
                    await _sleep_unless(stop, self._throttle_pause if self._throttled else poll_seconds)

    async def _relay_or_pause(self, pause: float) -> int:
        try:
            return await self.relay_once()
        except Exception:
            log.exception("relay cycle failed; retrying in %.1fs", pause)
            await asyncio.sleep(pause)
            return 0

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

    async def _publish(self, exchange: AbstractExchange, rows: Sequence[Row[Any]]) -> list[int]:
        now = self._clock()
        stamp = {headers.PUBLISHED_AT: int(now.timestamp() * 1000)}
        results = await asyncio.gather(
            *(
                exchange.publish(
                    amqp_message(_outbound(row), now, self._user_id, stamp),
                    routing_key=routing_key(row.tenant_id),
                    mandatory=True,
                )
                for row in rows
            ),
            return_exceptions=True,
        )
        confirmed = []
        for row, result in zip(rows, results, strict=True):
            if isinstance(result, BaseException):
                log.error("publish of %s failed, will retry: %r", row.message_id, result)
                PUBLISH_CONFIRMS.labels("failed").inc()
            else:
                confirmed.append(row.outbox_id)
        PUBLISH_CONFIRMS.labels("confirmed").inc(len(confirmed))
        return confirmed


def _next_rows(limit: int) -> Any:
    return (
        select(outbox)
        .where(outbox.c.published_at.is_(None))
        .order_by(outbox.c.outbox_id)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )


def _outbound(row: Row[Any]) -> OutboundPayment:
    return OutboundPayment(
        message_id=row.message_id,
        correlation_id=row.correlation_id,
        tenant_id=row.tenant_id,
        timestamp=row.accepted_at,
        expires_at=row.expires_at,
        body=row.body,
    )


async def _mark_published(conn: AsyncConnection, outbox_ids: list[int], now: datetime) -> None:
    await conn.execute(update(outbox).where(outbox.c.outbox_id.in_(outbox_ids)).values(published_at=now))


async def _wait_for_leadership(conn: AsyncConnection, stop: asyncio.Event) -> None:
    while not stop.is_set():
        got = (await conn.exec_driver_sql(f"SELECT pg_try_advisory_lock({RELAY_LOCK_KEY})")).scalar_one()
        await conn.commit()
        if got:
            return
        await _sleep_unless(stop, 1.0)


async def _sleep_unless(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)

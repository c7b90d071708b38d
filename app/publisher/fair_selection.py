"""Fair admission for the outbox relay: which unpublished rows go out in the next cycle.

A FIFO tier queue cannot be fair (a quiet tenant's payment waits behind a noisy tenant's backlog), so the
backlog stays in the outbox, where the relay chooses, and the broker queues stay shallow:

- fair selection: each cycle takes at most `max(1, batch_size // tenants)` rows per tenant with unpublished
  rows, in outbox_id order within a tenant (first delivery per batch stays in submission order),
  round-robin across tenants;
- refused rows wait their turn: a row the broker refused (unroutable, nacked) is not tried again before its
  `next_publish_at` (the relay backs off, app/publisher/relay.py), so rows that cannot go never take every
  place of a cycle from the tenants whose rows can (more stuck tenants than the batch size starved them);
- backpressure: a tenant with a backlog whose work queue holds more than `high_watermark` ready messages
  is skipped for the cycle; its rows wait in the outbox, nothing is lost. A trickling tenant (at most
  TRICKLE rows waiting) is never skipped, so a shared queue kept full by a flood does not hold it back.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aio_pika.exceptions
from aio_pika.abc import AbstractChannel, AbstractConnection, AbstractQueue
from sqlalchemy import ColumnElement, Row, func, or_, select, true
from sqlalchemy.ext.asyncio import AsyncConnection

from app.messaging.topology import Topology
from app.storage.tables import outbox, tenants

log = logging.getLogger("remit.relay")


TRICKLE = 10  # a tenant with at most this many unpublished rows is never held back by backpressure


def due() -> ColumnElement[bool]:
    """Unpublished and not waiting out a refusal's backoff (by the database's clock)."""
    return outbox.c.published_at.is_(None) & or_(
        outbox.c.next_publish_at.is_(None), outbox.c.next_publish_at <= func.now()
    )


@dataclass(frozen=True, slots=True)
class Pending:
    """A tenant with unpublished rows, where its payments are routed, and its backlog (capped)."""

    tenant_id: str
    tier: str
    dedicated: bool
    backlog: int  # unpublished rows, counted up to TRICKLE + 1

    @property
    def trickle(self) -> bool:
        return self.backlog <= TRICKLE


async def pending_tenants(conn: AsyncConnection) -> list[Pending]:
    """Tenants with outbox rows due for publishing (one short partial-index range scan per tenant)."""
    backlog = (
        select(outbox.c.outbox_id)
        .where(outbox.c.tenant_id == tenants.c.tenant_id, due())
        .limit(TRICKLE + 1)
        .lateral("backlog")
    )
    query = (
        select(tenants.c.tenant_id, tenants.c.tier, tenants.c.dedicated_queue, func.count().label("backlog"))
        .select_from(tenants.join(backlog, true()))
        .group_by(tenants.c.tenant_id)
        .order_by(tenants.c.tenant_id)
    )
    rows = (await conn.execute(query)).all()
    return [Pending(r.tenant_id, r.tier, r.dedicated_queue, int(r.backlog)) for r in rows]


async def fair_rows(conn: AsyncConnection, tenant_ids: Sequence[str], batch_size: int) -> list[Row[Any]]:
    """Up to `batch_size` rows due, at most an equal share per tenant, round-robin, locked."""
    if not tenant_ids:
        return []
    per_tenant = max(1, batch_size // len(tenant_ids))
    firsts = (  # each tenant's first `per_tenant` rows, numbered: one partial-index range scan per tenant
        select(outbox.c.outbox_id, func.row_number().over(order_by=outbox.c.outbox_id).label("rn"))
        .where(outbox.c.tenant_id == tenants.c.tenant_id, due())
        .order_by(outbox.c.outbox_id)
        .limit(per_tenant)
        .lateral("firsts")
    )
    ids_query = (  # round-robin: every tenant's 1st row, then every tenant's 2nd, ...
        select(firsts.c.outbox_id)
        .select_from(tenants.join(firsts, true()))
        .where(tenants.c.tenant_id.in_(tenant_ids))
        .order_by(firsts.c.rn, firsts.c.outbox_id)
        .limit(batch_size)
    )
    ids = [int(i) for i in (await conn.execute(ids_query)).scalars()]
    if not ids:
        return []
    locked = select(outbox).where(outbox.c.outbox_id.in_(ids), due())
    rows = (await conn.execute(locked.with_for_update(skip_locked=True))).all()
    position = {outbox_id: n for n, outbox_id in enumerate(ids)}
    return sorted(rows, key=lambda row: position[row.outbox_id])


class QueueDepths:
    """Ready messages per work queue (passive declares on a plain channel of its own), cached per cycle."""

    def __init__(self, connection: AbstractConnection, topology: Topology, high_watermark: int) -> None:
        self._connection = connection
        self._topology = topology
        self._channel: AbstractChannel | None = None
        self._queues: dict[str, AbstractQueue] = {}
        self.high_watermark = high_watermark

    async def throttled(self, pending: Sequence[Pending]) -> set[str]:
        """Tenants with a backlog whose work queue holds more than the high-watermark of ready messages.

        A trickling tenant is never held back: it cannot fill a queue, and waiting for a queue that a
        flooding tenant keeps full is exactly the starvation this prevents."""
        queue_of = {
            p.tenant_id: self._topology.queue_for(p.tenant_id, p.tier, p.dedicated) for p in pending if not p.trickle
        }
        depth = {name: await self._ready(name) for name in sorted(set(queue_of.values()))}  # one read per queue
        return {tenant for tenant, name in queue_of.items() if (depth[name] or 0) > self.high_watermark}

    async def _ready(self, name: str) -> int | None:
        if self._channel is None or self._channel.is_closed:
            self._channel = await self._connection.channel()
            self._queues.clear()
        try:
            if name not in self._queues:  # a robust channel hands back its first passive declare of a name,
                self._queues[name] = await self._channel.declare_queue(name, passive=True)  # so keep it and
            count = (await self._queues[name].declare()).message_count  # ask the broker again each time
        except aio_pika.exceptions.ChannelNotFoundEntity:
            return None  # not declared (yet): the publish itself will tell (unroutable) and retry
        return int(count) if count is not None else None

    async def close(self) -> None:
        if self._channel is not None and not self._channel.is_closed:
            await self._channel.close()

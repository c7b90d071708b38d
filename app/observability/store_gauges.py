"""Refresh the gauges that come from PostgreSQL (outbox backlog, open dead letters, value at risk)."""

import asyncio
import logging

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.observability.metrics import Metrics
from app.storage.unit_of_work import SYSTEM, SqlUnitOfWork

log = logging.getLogger("remit.metrics")

_BACKLOG = text("SELECT tenant_id, count(*) AS n FROM outbox WHERE published_at IS NULL GROUP BY tenant_id")
_DEAD = text(
    "SELECT coalesce(tenant_id, 'unknown') AS tenant_id, reason, coalesce(currency, '?') AS currency, "
    "count(*) AS n, coalesce(sum(amount_cents), 0) AS cents FROM dead_letters WHERE status = 'open' "
    "GROUP BY 1, 2, 3"
)


async def refresh(engine: AsyncEngine, metrics: Metrics) -> None:
    async with SqlUnitOfWork(engine, SYSTEM) as uow:  # gauges cover every tenant
        backlog = (await uow.connection.execute(_BACKLOG)).all()
        dead = (await uow.connection.execute(_DEAD)).all()
    metrics.outbox_backlog.clear()
    for row in backlog:
        metrics.outbox_backlog.labels(metrics.tenant(row.tenant_id)).inc(row.n)
    metrics.dlq_open.clear()
    metrics.dlq_value_at_risk.clear()
    for row in dead:
        tenant = metrics.tenant(row.tenant_id)
        metrics.dlq_open.labels(tenant, row.reason).inc(row.n)
        metrics.dlq_value_at_risk.labels(tenant, row.currency).inc(int(row.cents))


async def refresh_forever(engine: AsyncEngine, metrics: Metrics, every_seconds: float = 15.0) -> None:
    while True:
        try:
            await refresh(engine, metrics)
        except Exception:  # a scrape gap is better than a dead consumer
            log.warning("could not refresh store gauges", exc_info=True)
        await asyncio.sleep(every_seconds)

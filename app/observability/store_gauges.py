"""Refresh the gauges that come from PostgreSQL (outbox backlog, open dead letters, value at risk, security
events)."""

from app.observability.metrics import Metrics
from app.observability.refresh import refresh_every
from app.storage.unit_of_work import UnitOfWorkFactory


async def refresh(uow_factory: UnitOfWorkFactory, metrics: Metrics) -> None:
    async with uow_factory() as uow:  # the system scope: gauges cover every tenant
        backlog = await uow.outbox.backlog()
        dead = await uow.dead_letters.open_by_tenant()
        security = await uow.dead_letters.security_events_by_tenant()
    # Labels are added to, not set: tenants past the label limit share "other" (app/observability/metrics.py).
    metrics.outbox_backlog.clear()
    for tenant_id, waiting in backlog.items():
        metrics.outbox_backlog.labels(metrics.tenant(tenant_id)).inc(waiting)
    metrics.dlq_open.clear()
    metrics.dlq_value_at_risk.clear()
    for group in dead:
        label = metrics.tenant(group.tenant_id)
        metrics.dlq_open.labels(label, group.reason).inc(group.count)
        metrics.dlq_value_at_risk.labels(label, group.currency or "?").inc(group.amount_cents)
    metrics.security_events.clear()
    for flagged_tenant, events in security.items():
        metrics.security_events.labels(metrics.tenant(flagged_tenant)).inc(events)


async def refresh_forever(uow_factory: UnitOfWorkFactory, metrics: Metrics, every_seconds: float = 15.0) -> None:
    await refresh_every(lambda: refresh(uow_factory, metrics), every_seconds, "store gauges")

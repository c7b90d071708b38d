"""The queue and in-flight gauges on the consumer's /metrics: the figures of `remit queues list`,
refreshed every REMIT_QUEUE_METRICS_SECONDS, by one process of the deployment on a host at a time (the
others show its snapshot: app/observability/shared_snapshot.py).

Labels stay bounded: a dedicated queue is labelled with its tenant's bounded label (past the cap its
figures add up under `payments.work.tenant.other`), and so are the tenant gauges.
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime

from app.observability.in_flight import TenantLoad, tenant_loads
from app.observability.live_queues import DEDICATED, QueueFigures, QueueKind, QueueWatch
from app.observability.metrics import Metrics
from app.observability.refresh import refresh_every
from app.observability.shared_snapshot import Json, SharedSnapshot
from app.storage.unit_of_work import UnitOfWorkFactory

Figures = dict[str, float]


async def refresh(
    watch: QueueWatch, uow: UnitOfWorkFactory, metrics: Metrics, now: datetime, shared: SharedSnapshot
) -> None:
    async def take() -> Json:
        live = await watch.live(now)
        loads = await tenant_loads(uow, None, now)
        return {"queues": [asdict(q) for q in live.queues], "tenants": [asdict(t) for t in loads]}

    snapshot = await shared.get(take)
    if snapshot is None:  # another process is taking the first one
        return
    queues = [QueueFigures(**{**q, "kind": QueueKind(**q["kind"])}) for q in snapshot["queues"]]
    _set_queues(metrics, _by_label(watch, metrics, queues))
    _set_tenants(metrics, [TenantLoad(**t) for t in snapshot["tenants"]])


async def refresh_forever(
    watch: QueueWatch, uow: UnitOfWorkFactory, metrics: Metrics, every_seconds: float, shared: SharedSnapshot
) -> None:
    await refresh_every(
        lambda: refresh(watch, uow, metrics, datetime.now().astimezone(), shared), every_seconds, "queue gauges"
    )


def _by_label(watch: QueueWatch, metrics: Metrics, queues: Sequence[QueueFigures]) -> dict[tuple[str, str], Figures]:
    figures: dict[tuple[str, str], Figures] = defaultdict(lambda: defaultdict(float))
    for q in queues:
        name = watch.topology.dedicated_queue(metrics.tenant(q.kind.detail)) if q.kind.kind == DEDICATED else q.name
        f = figures[(name, q.kind.kind)]
        f["ready"] += q.ready
        f["unacked"] += q.unacknowledged
        f["consumers"] += q.consumers
        f["publish"] += q.publish_rate
        f["deliver"] += q.deliver_rate
        if q.oldest_age_seconds is not None or q.ready == 0:  # unknown ages stay absent, never 0
            f["age"] = max(f["age"], q.oldest_age_seconds or 0.0)
    return figures


def _set_queues(metrics: Metrics, figures: dict[tuple[str, str], Figures]) -> None:
    gauges = (
        metrics.queue_messages,
        metrics.queue_consumers,
        metrics.queue_publish_rate,
        metrics.queue_deliver_rate,
        metrics.queue_oldest_age,
    )
    for gauge in gauges:
        gauge.clear()
    for (name, kind), f in figures.items():
        metrics.queue_messages.labels(name, kind, "ready").set(f["ready"])
        metrics.queue_messages.labels(name, kind, "unacked").set(f["unacked"])
        metrics.queue_consumers.labels(name, kind).set(f["consumers"])
        metrics.queue_publish_rate.labels(name, kind).set(f["publish"])
        metrics.queue_deliver_rate.labels(name, kind).set(f["deliver"])
        if "age" in f:
            metrics.queue_oldest_age.labels(name, kind).set(f["age"])


def _set_tenants(metrics: Metrics, loads: list[TenantLoad]) -> None:
    metrics.tenant_in_flight.clear()
    metrics.tenant_in_flight_limit.clear()
    for load in loads:
        tenant = metrics.tenant(load.tenant_id)
        metrics.tenant_in_flight.labels(tenant).inc(load.in_flight)
        metrics.tenant_in_flight_limit.labels(tenant).inc(load.limit)

"""Prometheus metrics. Labels are bounded: `tenant` takes at most MAX_TENANT_LABELS distinct values
(then "other"), `reason` and `outcome` are fixed vocabularies, `queue` is remit's own queue names."""

import threading
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# Where a consumer batch's time went: (stage, seconds); Metrics.observe_stage is the real one.
ObserveStage = Callable[[str, float], None]


def ignore_stage(stage: str, seconds: float) -> None:
    """The ObserveStage of components built without metrics."""


MAX_TENANT_LABELS = 200
OTHER = "other"
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class TenantLabels:
    """Hands out tenant label values, at most `limit` distinct ones, so a flood of ids cannot explode series."""

    def __init__(self, limit: int = MAX_TENANT_LABELS) -> None:
        self._limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, tenant_id: str | None) -> str:
        if tenant_id is None:
            return "unknown"
        with self._lock:
            if tenant_id in self._seen or len(self._seen) < self._limit:
                self._seen.add(tenant_id)
                return tenant_id
        return OTHER


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.tenant = TenantLabels()
        r = self.registry
        self.consumed = Counter("remit_consumed", "Deliveries consumed", ["queue", "tenant"], registry=r)
        self.outcomes = Counter(
            "remit_outcomes",
            "Delivery outcomes: processed, duplicate, retrying, dead_lettered",
            ["queue", "tenant", "outcome"],
            registry=r,
        )
        self.dead_lettered = Counter(
            "remit_dead_lettered", "Dead letters by reason", ["queue", "tenant", "reason"], registry=r
        )
        self.quarantined = Counter(
            "remit_quarantined", "Security events: tenant mismatch or unauthenticated publisher", ["tenant"], registry=r
        )
        self.latency = Histogram(
            "remit_publish_to_processed_seconds",
            "From the relay's publish to the commit of the effect",
            ["tenant"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.outbox_backlog = Gauge("remit_outbox_backlog", "Accepted, not yet published", ["tenant"], registry=r)
        self.dlq_open = Gauge("remit_dead_letters_open", "Open dead letters", ["tenant", "reason"], registry=r)
        self.dlq_value_at_risk = Gauge(
            "remit_dead_letters_value_at_risk_cents",
            "Sum of amount_cents of open dead letters, per currency (never summed across currencies)",
            ["tenant", "currency"],
            registry=r,
        )
        self.batch_stage = Histogram(
            "remit_batch_stage_seconds",
            "Where a consumer batch's time goes: delivered (its oldest message, from the publish stamp to our "
            "consumer callback), buffered (waiting for a worker), processing "
            "(reading, commit and failures), commit_wait (queued behind the previous flush), commit (the "
            "transactions of one flush), settle (the acks)",
            ["stage"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )

    def observe_stage(self, stage: str, seconds: float) -> None:
        self.batch_stage.labels(stage).observe(seconds)

"""Prometheus metrics. Labels are bounded: `tenant` takes at most MAX_TENANT_LABELS distinct values
(then "other"), `reason`, `outcome`, `kind` and `state` are fixed vocabularies, `queue` is remit's own
queue names (a dedicated queue's name ends in its tenant's label, so it is bounded the same way)."""

import threading
from bisect import bisect_left
from collections import Counter as Tally
from collections.abc import Callable, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# Where a consumer batch's time went: (stage, seconds); Metrics.observe_stage is the real one.
ObserveStage = Callable[[str, float], None]


def ignore_stage(stage: str, seconds: float) -> None:
    """The ObserveStage of components built without metrics."""


# One request to the external core: (route, result, seconds); Metrics.observe_core is the real one.
ObserveCore = Callable[[str, str, float], None]


def ignore_core(route: str, result: str, seconds: float) -> None:
    """The ObserveCore of adapters built without metrics."""


MAX_TENANT_LABELS = 200
OTHER = "other"
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# A pause of the process (a collection, the event loop held up): from half a millisecond to seconds.
PAUSE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
# A core request on loopback takes milliseconds to tens of them: finer at the low end than LATENCY_BUCKETS.
CORE_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


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
        self.outbox_backlog = Gauge(
            "remit_outbox_backlog",
            "Accepted, not yet published (every tenant: 0 when none waits)",
            ["tenant"],
            registry=r,
        )
        self.dlq_open = Gauge("remit_dead_letters_open", "Open dead letters", ["tenant", "reason"], registry=r)
        self.security_events = Gauge(
            "remit_security_events",
            "Dead letters in the store flagged as security events (tenant_mismatch, a claimed tenant that is not "
            "the publisher's, remit-* headers from an untrusted publisher), by the publisher's tenant",
            ["tenant"],
            registry=r,
        )
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
        self.pauses = Histogram(
            "remit_pause_seconds",
            "Pauses of this process: each garbage collection by generation (gc_gen0, gc_gen1, gc_gen2), and how "
            "late the event loop ran a timer (loop_lag): a delivery that arrives meanwhile waits that long",
            ["kind"],
            buckets=PAUSE_BUCKETS,
            registry=r,
        )

        self.queue_messages = Gauge(
            "remit_queue_messages",
            "Messages in one of remit's queues, by state (ready, unacked), from the management API",
            ["queue", "kind", "state"],
            registry=r,
        )
        self.queue_consumers = Gauge(
            "remit_queue_consumers", "AMQP consumers on the queue", ["queue", "kind"], registry=r
        )
        self.queue_publish_rate = Gauge(
            "remit_queue_publish_rate", "Messages per second entering the queue", ["queue", "kind"], registry=r
        )
        self.queue_deliver_rate = Gauge(
            "remit_queue_deliver_rate", "Messages per second delivered from the queue", ["queue", "kind"], registry=r
        )
        self.queue_oldest_age = Gauge(
            "remit_queue_oldest_message_age_seconds",
            "Age of the message at the queue's head, from its timestamp property (0: empty; absent: unknown)",
            ["queue", "kind"],
            registry=r,
        )
        self.tenant_in_flight = Gauge(
            "remit_tenant_in_flight",
            "Payments accepted and not finished, counted as the in-flight limit counts them",
            ["tenant"],
            registry=r,
        )
        self.tenant_in_flight_limit = Gauge(
            "remit_tenant_in_flight_limit", "The tenant's max_in_flight", ["tenant"], registry=r
        )

        self.core_breaker_state = Gauge(
            "remit_core_breaker_state",
            "The core-banking circuit breaker: 1 for its current state (closed, open), 0 for the other; absent "
            "with the embedded ledger",
            ["state"],
            registry=r,
        )
        self.core_breaker_opened = Counter(
            "remit_core_breaker_opened", "Times the core-banking circuit breaker opened", registry=r
        )
        self.core_request = Histogram(
            "remit_core_request_seconds",
            "Time inside one HTTP request to the external core, by route (transfers_batch, transfers_status) and "
            "result (an HTTP status, or the transport error's class); absent with the embedded ledger",
            ["route", "result"],
            buckets=CORE_BUCKETS,
            registry=r,
        )

    def observe_latencies(self, tenant: str, seconds: Sequence[float]) -> None:
        """A batch's publish-to-processed latencies, counted per bucket: the same series as one `observe` per
        payment, which takes two locks and walks the buckets each time (a few µs a payment of the consumer's
        CPU). Reads the child's bucket counters: prometheus_client is pinned, and a test compares the two."""
        if not seconds:
            return
        child = self.latency.labels(tenant)
        for index, n in Tally(bisect_left(child._upper_bounds, value) for value in seconds).items():
            child._buckets[index].inc(n)
        child._sum.inc(sum(seconds))

    def observe_stage(self, stage: str, seconds: float) -> None:
        self.batch_stage.labels(stage).observe(seconds)

    def observe_pause(self, kind: str, seconds: float) -> None:
        self.pauses.labels(kind).observe(seconds)

    def observe_core(self, route: str, result: str, seconds: float) -> None:
        self.core_request.labels(route, result).observe(seconds)

"""The admin process's Prometheus metrics (its /metrics): what its HTTP edge refused. Labels are fixed
vocabularies, never a source address, a key id or a tenant."""

from prometheus_client import CollectorRegistry, Counter


class AdminMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.body_refusals = Counter(
            "remit_admin_body_refusals",
            "Request bodies refused 413 by route class (request, upload) and how they were found too large "
            "(declared: by their Content-Length, before any byte was read; counted: as they arrived)",
            ["route_class", "how"],
            registry=self.registry,
        )

    def refused_body(self, route_class: str, how: str) -> None:
        self.body_refusals.labels(route_class, how).inc()

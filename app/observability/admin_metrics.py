"""The admin process's Prometheus metrics (its /metrics): what its HTTP edge refused. Labels are fixed
vocabularies, never a source address, a key id or a tenant."""

from prometheus_client import CollectorRegistry, Counter


class AdminMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.auth_refusals = Counter(
            "remit_admin_auth_refusals",
            "Failed authentications by surface (api: a key on a request; console: a login) and answer: "
            "missing_key and wrong_key were answered 401, throttled_source and throttled_key 429 (the brake)",
            ["surface", "reason"],
            registry=self.registry,
        )
        self.body_refusals = Counter(
            "remit_admin_body_refusals",
            "Request bodies refused 413 by route class (request, upload) and how they were found too large "
            "(declared: by their Content-Length, before any byte was read; counted: as they arrived)",
            ["route_class", "how"],
            registry=self.registry,
        )

    def refused_auth(self, surface: str, reason: str) -> None:
        self.auth_refusals.labels(surface, reason).inc()

    def refused_body(self, route_class: str, how: str) -> None:
        self.body_refusals.labels(route_class, how).inc()

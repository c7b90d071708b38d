"""What the admin app's HTTP edge holds while it runs (built with the app, kept on `app.state.edge`): the
brake on guessing, and the metrics and log lines of every refusal. A log line names the source, the route
and a key's id, never a secret; a refused body is described by its route class and size, never quoted."""

import logging
from dataclasses import dataclass
from typing import Annotated, cast

from fastapi import Depends, Request
from starlette.types import Scope

from app.admin.api_keys import key_id_of
from app.admin.brake import AuthBrake, Verdict
from app.observability.admin_metrics import AdminMetrics

API, CONSOLE = "api", "console"  # where a key was presented: on an API request, or at the console's login
MISSING_KEY = "missing_key"
log = logging.getLogger("remit.admin.edge")


@dataclass(frozen=True, slots=True)
class Edge:
    metrics: AdminMetrics
    brake: AuthBrake

    def body_refused(self, route_class: str, how: str, scope: Scope) -> None:
        self.metrics.refused_body(route_class, how)
        log.warning(
            "request body refused (413): %s %s from %s is over the %s limit (%s)",
            scope["method"],
            scope["path"],
            _host(scope),
            route_class,
            how,
        )

    def key_missing(self, surface: str, host: str | None) -> None:
        self.metrics.refused_auth(surface, MISSING_KEY)
        log.info("authentication refused (%s): no key, %s, from %s", MISSING_KEY, surface, host)

    def key_failed(self, surface: str, host: str | None, presented: str) -> Verdict:
        """Count a wrong key (its secret stays out of everything), and say how it is answered."""
        key_id = key_id_of(presented)
        verdict = self.brake.failed(host, key_id)
        self.metrics.refused_auth(surface, verdict.reason)
        log.warning(
            "authentication refused (%s): %s, from %s, %s%s",
            verdict.reason,
            surface,
            host,
            f"key {key_id}" if key_id else "not a key's form",
            f", retry after {verdict.retry_after} s" if verdict.refused else "",
        )
        return verdict


def _host(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None


def host_of(request: Request) -> str | None:
    return request.client.host if request.client else None


def get_edge(request: Request) -> Edge:
    return cast(Edge, request.app.state.edge)


EdgeState = Annotated[Edge, Depends(get_edge)]

"""What the admin app's HTTP edge holds while it runs (built with the app, kept on `app.state.edge`): the
metrics and log lines of every refusal. A log line names the source and the route; a refused body is
described by its route class, never quoted."""

import logging
from dataclasses import dataclass

from starlette.types import Scope

from app.observability.admin_metrics import AdminMetrics

log = logging.getLogger("remit.admin.edge")


@dataclass(frozen=True, slots=True)
class Edge:
    metrics: AdminMetrics

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


def _host(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None

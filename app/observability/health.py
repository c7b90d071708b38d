"""HTTP endpoints of the consumer process: /healthz (alive), /readyz (able to work), /metrics."""

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from faststream.asgi import AsgiResponse, get
from faststream.asgi.handlers import GetHandler
from faststream.asgi.types import Scope
from faststream.rabbit import RabbitBroker
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.observability.metrics import Metrics
from app.observability.relay_health import relay_state
from app.storage.migrations import current_revision, head_revision
from app.storage.unit_of_work import SYSTEM, SqlUnitOfWork

CHECK_TIMEOUT = 3.0


@dataclass
class Readiness:
    """What /readyz checks; the engines and `consuming` (committer and some pool running) are set by the
    lifespan once they exist."""

    broker: RabbitBroker
    database_url: str
    relay_backlog_seconds: float
    engine: AsyncEngine | None = None
    system_engine: AsyncEngine | None = None  # sees every tenant's outbox rows
    consuming: Callable[[], bool] = lambda: False
    core_banking: Callable[[], bool | str] = lambda: True  # the breaker's word (app/consumer/core_link.py)
    # What the last report saw that needs an operator but is no reason to be unready (rows the broker refused).
    warnings: list[str] = field(default_factory=list)

    async def report(self) -> dict[str, bool | str]:
        checks: dict[str, Callable[[], Awaitable[bool | str]]] = {
            "broker": self._broker,
            "consumers": self._consumers,
            "database": self._database,
            "migrations": self._migrations,
            "relay": self._relay,
            "core_banking": self._core_banking,
        }
        results = await asyncio.gather(*(_bounded(c) for c in checks.values()))
        return dict(zip(checks, results, strict=True))

    async def _broker(self) -> bool:
        return await self.broker.ping(CHECK_TIMEOUT)

    async def _consumers(self) -> bool:
        # Pools an admin stopped are not a failure; no consumer at all is.
        return self.consuming()

    async def _core_banking(self) -> bool | str:
        # An open circuit breaker is not ready: the consumers are paused until a probe finds the core ready.
        return self.core_banking()

    async def _database(self) -> bool:
        if self.engine is None:
            return False
        async with self.engine.connect() as conn:
            await conn.exec_driver_sql("SELECT 1")
        return True

    async def _migrations(self) -> bool | str:
        if self.engine is None:
            return False
        current = await current_revision(self.engine)
        return (
            current == head_revision(self.database_url) or f"at {current}, head is {head_revision(self.database_url)}"
        )

    async def _relay(self) -> bool | str:
        # Not this process's own fault, but the pipeline's: payments accepted and never published.
        if self.system_engine is None:
            return False
        async with SqlUnitOfWork(self.system_engine, SYSTEM) as uow:
            state = await relay_state(uow.connection)
        refusals = state.refusals(self.relay_backlog_seconds)
        self.warnings = [refusals] if refusals else []
        return state.problem(self.relay_backlog_seconds) or True


async def _bounded(check: Callable[[], Awaitable[bool | str]]) -> bool | str:
    try:
        return await asyncio.wait_for(check(), CHECK_TIMEOUT)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"[:200]


def health_routes(readiness: Readiness, metrics: Metrics) -> list[tuple[str, GetHandler]]:
    @get(include_in_schema=False)
    async def healthz(scope: Scope) -> AsgiResponse:
        return AsgiResponse(b'{"status": "alive"}', 200, {"content-type": "application/json"})

    @get(include_in_schema=False)
    async def readyz(scope: Scope) -> AsgiResponse:
        report = await readiness.report()
        ready = all(v is True for v in report.values())
        warnings = {"warnings": readiness.warnings} if readiness.warnings else {}
        body = json.dumps({"ready": ready, "checks": report} | warnings).encode()
        return AsgiResponse(body, 200 if ready else 503, {"content-type": "application/json"})

    @get(include_in_schema=False)
    async def metrics_endpoint(scope: Scope) -> AsgiResponse:
        return AsgiResponse(generate_latest(metrics.registry), 200, {"content-type": CONTENT_TYPE_LATEST})

    return [("/healthz", healthz), ("/readyz", readyz), ("/metrics", metrics_endpoint)]

"""What the consumer holds of its core banking while it runs: the adapter Settings chose and, for an external
core, the circuit breaker in front of it, whose state /readyz, /metrics, the logs and the heartbeats show."""

from dataclasses import dataclass

from app.consumer.breaker import BreakerState, BreakerStatus, CircuitBreaker, Listener
from app.consumer.core_banking import CoreBanking
from app.observability.metrics import Metrics


@dataclass(frozen=True, slots=True)
class CoreLink:
    core_banking: CoreBanking
    breaker: CircuitBreaker | None = None  # None: the embedded ledger, or an adapter a test injected

    @property
    def status(self) -> BreakerStatus | None:
        return self.breaker.status if self.breaker is not None else None

    def readiness(self) -> bool | str:
        """/readyz's `core_banking` check: true unless the breaker is open. An open breaker makes the consumer
        not ready (503): it takes no payments until a probe finds the core ready again, by itself."""
        status = self.status
        if status is None or status.state is BreakerState.CLOSED:
            return True
        since = status.since.strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"circuit breaker open since {since} (last failure: {status.last_failure}); consumers paused"


def show_breaker(metrics: Metrics, status: BreakerStatus) -> None:
    """/metrics: the breaker's state as a 0/1 gauge per state, and a count of the times it opened."""
    for state in BreakerState:
        metrics.core_breaker_state.labels(state.value).set(1 if status.state is state else 0)


def breaker_metrics(metrics: Metrics) -> Listener:
    """The breaker's listener that keeps /metrics in step with it."""

    async def listen(status: BreakerStatus) -> None:
        show_breaker(metrics, status)
        if status.state is BreakerState.OPEN:
            metrics.core_breaker_opened.inc()

    return listen

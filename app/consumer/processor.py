"""Process one delivery: read it, commit its effect (group commit), or route its failure. Never raises
for a bad message; raises only when the failure itself could not be recorded, so the broker redelivers."""

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from app.consumer.committer import GroupCommitter, Outcome
from app.consumer.delivery import Delivery
from app.consumer.failures import FailureOutcome, FailureRouter
from app.consumer.intake import expired, read_payment
from app.errors import RemitError, RetryableError, TenantMismatch
from app.messaging import headers
from app.observability.metrics import Metrics
from contracts import PaymentMessage

log = logging.getLogger("remit.consumer")


class PaymentProcessor:
    def __init__(
        self,
        committer: GroupCommitter,
        failures: FailureRouter,
        max_message_bytes: int,
        trusted_publishers: frozenset[str],
        metrics: Metrics | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._committer = committer
        self._failures = failures
        self._max_bytes = max_message_bytes
        self._trusted = trusted_publishers
        self._metrics = metrics or Metrics()
        self._clock = clock

    async def process(self, delivery: Delivery) -> str:
        tenant = self._metrics.tenant(_header_tenant(delivery))
        self._metrics.consumed.labels(delivery.queue, tenant).inc()
        payment: PaymentMessage | None = None
        try:
            payment = read_payment(delivery, self._max_bytes, self._trusted)
            if payment.is_expired(self._clock()):
                # Paid before its TTL ran out and redelivered since (a crash before the ack): a duplicate.
                if not await self._committer.was_processed(payment):
                    raise expired(payment)
                outcome = Outcome.DUPLICATE
            else:
                outcome = await self._committer.commit(payment, attempt=payment.retry_count + 1)
        except RemitError as error:
            return await self._fail(delivery, payment, error, tenant)
        except Exception as exc:  # unknown failures are treated as retryable, never as success
            return await self._fail(delivery, payment, RetryableError(f"{type(exc).__name__}: {exc}"), tenant)
        self._metrics.outcomes.labels(delivery.queue, tenant, outcome.value).inc()
        if outcome is Outcome.PROCESSED:
            self._observe_latency(delivery, tenant)
        return outcome.value

    async def _fail(self, delivery: Delivery, payment: PaymentMessage | None, error: RemitError, tenant: str) -> str:
        result = await self._failures.handle(delivery, payment, error, self._clock())
        self._count_failure(delivery, result, error, tenant)
        log.warning(
            "payment %s: %s (%s: %s)",
            payment.message_id if payment else delivery.message_id,
            result.outcome,
            type(error).__name__,
            error,
            extra={
                "message_id": str(payment.message_id) if payment else delivery.message_id,
                "tenant_id": payment.tenant_id if payment else _header_tenant(delivery),
                "correlation_id": payment.correlation_id if payment else None,
                "attempt": payment.retry_count + 1 if payment else 1,
            },
        )
        return result.outcome

    def _count_failure(self, delivery: Delivery, result: FailureOutcome, error: RemitError, tenant: str) -> None:
        self._metrics.outcomes.labels(delivery.queue, tenant, result.outcome).inc()
        if result.reason is not None:
            self._metrics.dead_lettered.labels(delivery.queue, tenant, result.reason).inc()
        if isinstance(error, TenantMismatch):
            self._metrics.quarantined.labels(tenant).inc()

    def _observe_latency(self, delivery: Delivery, tenant: str) -> None:
        published = delivery.headers.get(headers.PUBLISHED_AT)
        if isinstance(published, int | float) and not isinstance(published, bool):
            elapsed = self._clock().timestamp() - published / 1000
            self._metrics.latency.labels(tenant).observe(max(elapsed, 0.0))


def _header_tenant(delivery: Delivery) -> str | None:
    value = delivery.headers.get(headers.TENANT)
    return value if isinstance(value, str) else None

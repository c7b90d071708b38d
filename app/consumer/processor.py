"""Process a batch of deliveries: read each, commit the good ones together (group commit), route each
failure. Never raises for a bad message. Says, per delivery, whether it is settled (may be acked); a
delivery is unsettled only when its failure could not be recorded, so the broker must redeliver it."""

import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from app.consumer.committer import GroupCommitter, Outcome, Result
from app.consumer.delivery import Delivery
from app.consumer.failures import FailureOutcome, FailureRouter
from app.consumer.intake import expired, read_payment
from app.errors import RemitError, RetryableError, TenantMismatch
from app.messaging import headers
from app.observability.metrics import Metrics
from contracts import PaymentMessage

log = logging.getLogger("remit.consumer")

Read = PaymentMessage | RemitError


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

    async def process_batch(self, deliveries: Sequence[Delivery]) -> list[bool]:
        """For each delivery, True once it is settled: committed, a duplicate, retried or dead-lettered."""
        now = self._clock()
        reads = [self._read(d) for d in deliveries]
        fresh = {i: r for i, r in enumerate(reads) if isinstance(r, PaymentMessage) and not r.is_expired(now)}
        try:
            committed = dict(zip(fresh, await self._committer.commit_many(list(fresh.values())), strict=True))
        except RemitError as error:  # the committer is down: each payment is retried
            committed = dict.fromkeys(fresh, error)
        results: list[Result] = []
        for i, read in enumerate(reads):
            if i in committed:
                results.append(committed[i])
            elif isinstance(read, RemitError):
                results.append(read)
            else:  # expired before it could be committed: paid already, or expired
                results.append(await self._late(read))
        self._count(deliveries, results)
        return [await self._settle(d, read, result) for d, read, result in zip(deliveries, reads, results, strict=True)]

    def _read(self, delivery: Delivery) -> Read:
        try:
            return read_payment(delivery, self._max_bytes, self._trusted)
        except RemitError as error:
            return error
        except Exception as exc:  # unknown failures are treated as retryable, never as success
            return RetryableError(f"{type(exc).__name__}: {exc}")

    async def _late(self, payment: PaymentMessage) -> Result:
        # Paid before its TTL ran out and redelivered since (a crash before the ack): a duplicate.
        try:
            return Outcome.DUPLICATE if await self._committer.was_processed(payment) else expired(payment)
        except Exception as exc:
            return RetryableError(f"{type(exc).__name__}: {exc}")

    async def _settle(self, delivery: Delivery, read: Read, result: Result) -> bool:
        if isinstance(result, Outcome):
            return True
        payment = read if isinstance(read, PaymentMessage) else None
        try:
            await self._fail(delivery, payment, result)
        except Exception:
            log.exception("could not record the failure of %s; it goes back to the queue", delivery.message_id)
            return False
        return True

    def _count(self, deliveries: Sequence[Delivery], results: Sequence[Result]) -> None:
        # Counted per (queue, tenant, outcome) and batch, then added: per-message label lookups cost real CPU.
        consumed: Counter[tuple[str, str | None]] = Counter()
        outcomes: Counter[tuple[str, str | None, str]] = Counter()
        latencies: dict[str | None, list[float]] = defaultdict(list)
        committed_at = self._clock().timestamp()
        for delivery, result in zip(deliveries, results, strict=True):
            header = _header_tenant(delivery)
            consumed[delivery.queue, header] += 1
            if isinstance(result, Outcome):
                outcomes[delivery.queue, header, result.value] += 1
                published = delivery.headers.get(headers.PUBLISHED_AT)
                if (
                    result is Outcome.PROCESSED
                    and isinstance(published, int | float)
                    and not isinstance(published, bool)
                ):
                    latencies[header].append(max(committed_at - published / 1000, 0.0))
        tenant = self._metrics.tenant
        for (queue, header), n in consumed.items():
            self._metrics.consumed.labels(queue, tenant(header)).inc(n)
        for (queue, header, outcome), n in outcomes.items():
            self._metrics.outcomes.labels(queue, tenant(header), outcome).inc(n)
        for header, values in latencies.items():
            histogram = self._metrics.latency.labels(tenant(header))
            for value in values:
                histogram.observe(value)

    async def _fail(self, delivery: Delivery, payment: PaymentMessage | None, error: RemitError) -> None:
        result = await self._failures.handle(delivery, payment, error, self._clock())
        self._count_failure(delivery, result, error)
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

    def _count_failure(self, delivery: Delivery, result: FailureOutcome, error: RemitError) -> None:
        tenant = self._metrics.tenant(_header_tenant(delivery))
        self._metrics.outcomes.labels(delivery.queue, tenant, result.outcome).inc()
        if result.reason is not None:
            self._metrics.dead_lettered.labels(delivery.queue, tenant, result.reason).inc()
        if isinstance(error, TenantMismatch):
            self._metrics.quarantined.labels(tenant).inc()


def _header_tenant(delivery: Delivery) -> str | None:
    value = delivery.headers.get(headers.TENANT)
    return value if isinstance(value, str) else None

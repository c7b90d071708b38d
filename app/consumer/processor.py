"""Process a batch of deliveries: admit the direct publishes (their tenant's limits), read each (the
contract, identity and the business rules), commit the good ones together (group commit), route each
failure. Never raises for a bad message. Says, per delivery, whether it is settled (may be acked); a
delivery is unsettled when its failure could not be recorded, or when the core's circuit breaker was open
(CircuitOpen: nothing was sent, so no attempt happened): the broker must then redeliver it, and it goes
back without spending a retry. Those are returned after RETURN_DELAY seconds, by which time the breaker's
listener has paused the consumers, so the broker keeps them instead of redelivering them at once (each
redelivery counts towards the queue's delivery limit)."""

import asyncio
import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

from app.consumer.admission import DirectAdmission, Refusal
from app.consumer.committer import GroupCommitter, Outcome, Result
from app.consumer.delivery import Delivery
from app.consumer.failures import FailureOutcome, FailureRouter
from app.consumer.intake import IntakePolicy, expired, read_payment
from app.errors import CircuitOpen, MessageFailure, RetryableError, TenantMismatch
from app.messaging import headers
from app.observability.metrics import Metrics
from app.storage.db_errors import describe
from app.storage.ports.tenants import TenantLimits
from app.tenancy.directory import TenantDirectory
from contracts import PaymentMessage

log = logging.getLogger("remit.consumer")

Read = PaymentMessage | MessageFailure
RETURN_DELAY = 1.0  # seconds


class PaymentProcessor:
    def __init__(
        self,
        committer: GroupCommitter,
        failures: FailureRouter,
        intake: IntakePolicy,
        directory: TenantDirectory,
        admission: DirectAdmission,
        metrics: Metrics | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._committer = committer
        self._failures = failures
        self._intake = intake
        self._directory = directory
        self._admission = admission
        self._metrics = metrics or Metrics()
        self._clock = clock

    async def process_batch(self, deliveries: Sequence[Delivery]) -> list[bool]:
        """For each delivery, True once it is settled: committed, a duplicate, retried or dead-lettered."""
        now = self._clock()
        tenants = await self._directory.limits(self._vouched_tenants(deliveries))
        admitted = await self._admission.admit(deliveries, tenants, now)
        try:
            return await self._process(deliveries, admitted.refusals, tenants, now)
        finally:
            self._admission.release(admitted)

    def _vouched_tenants(self, deliveries: Sequence[Delivery]) -> set[str]:
        """The tenants these deliveries may belong to, as their publishers' identity says: never a name a
        direct publisher chose (so it cannot make the directory look up names of its choosing)."""
        names = set()
        for delivery in deliveries:
            own = self._admission.tenant_of(delivery)
            if own is not None:
                names.add(own)
            elif self._intake.publishers.is_trusted(delivery.user_id) and (header := _header_tenant(delivery)):
                names.add(header)
        return names

    async def _process(
        self,
        deliveries: Sequence[Delivery],
        refusals: Sequence[Refusal],
        tenants: Mapping[str, TenantLimits],
        now: datetime,
    ) -> list[bool]:
        reads = [
            self._read(d, tenants, now) if refusal is None else refusal
            for d, refusal in zip(deliveries, refusals, strict=True)
        ]
        fresh = {i: r for i, r in enumerate(reads) if isinstance(r, PaymentMessage) and not r.is_expired(now)}
        try:
            committed = dict(zip(fresh, await self._committer.commit_many(list(fresh.values())), strict=True))
        except MessageFailure as error:  # the committer is down: each payment is retried
            committed = dict.fromkeys(fresh, error)
        results: list[Result] = []
        for i, read in enumerate(reads):
            if i in committed:
                results.append(committed[i])
            elif isinstance(read, MessageFailure):
                results.append(read)
            else:  # expired before it could be committed: paid already, or expired
                results.append(await self._late(read))
        self._count(deliveries, results)
        if any(isinstance(result, CircuitOpen) for result in results):
            await asyncio.sleep(RETURN_DELAY)
        return [await self._settle(d, read, result) for d, read, result in zip(deliveries, reads, results, strict=True)]

    def _read(self, delivery: Delivery, tenants: Mapping[str, TenantLimits], now: datetime) -> Read:
        try:
            return read_payment(delivery, self._intake, tenants, now)
        except MessageFailure as error:
            return error
        except Exception as exc:  # retryable, never a success; never str(exc): it may quote the body
            return RetryableError(f"reading the delivery failed: {describe(exc)}")

    async def _late(self, payment: PaymentMessage) -> Result:
        # Paid before its TTL ran out and redelivered since (a crash before the ack): a duplicate.
        try:
            return Outcome.DUPLICATE if await self._committer.was_processed(payment) else expired(payment)
        except Exception as exc:
            return RetryableError(f"the idempotency check failed: {describe(exc)}")

    async def _settle(self, delivery: Delivery, read: Read, result: Result) -> bool:
        if isinstance(result, Outcome):
            return True
        if isinstance(result, CircuitOpen):
            return False  # back to the broker: no attempt reached the core, none is counted
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
        trusts = self._intake.publishers.is_trusted
        for delivery, result in zip(deliveries, results, strict=True):
            header = _header_tenant(delivery)
            consumed[delivery.queue, header] += 1
            if isinstance(result, Outcome):
                outcomes[delivery.queue, header, result.value] += 1
                if result is Outcome.PROCESSED and (published := delivery.published_at(trusts)) is not None:
                    latencies[header].append(max(committed_at - published, 0.0))
        tenant = self._metrics.tenant
        for (queue, header), n in consumed.items():
            self._metrics.consumed.labels(queue, tenant(header)).inc(n)
        for (queue, header, outcome), n in outcomes.items():
            self._metrics.outcomes.labels(queue, tenant(header), outcome).inc(n)
        for header, values in latencies.items():
            self._metrics.observe_latencies(tenant(header), values)

    async def _fail(self, delivery: Delivery, payment: PaymentMessage | None, error: MessageFailure) -> None:
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
                "tenant_id": result.tenant,  # who really published it, not what the message claims
                "correlation_id": payment.correlation_id if payment else None,
                "attempt": payment.retry_count + 1 if payment else 1,
            },
        )

    def _count_failure(self, delivery: Delivery, result: FailureOutcome, error: MessageFailure) -> None:
        tenant = self._metrics.tenant(result.tenant)
        self._metrics.outcomes.labels(delivery.queue, tenant, result.outcome).inc()
        if result.reason is not None:
            self._metrics.dead_lettered.labels(delivery.queue, tenant, result.reason).inc()
        if isinstance(error, TenantMismatch):
            self._metrics.quarantined.labels(tenant).inc()


def _header_tenant(delivery: Delivery) -> str | None:
    value = delivery.headers.get(headers.TENANT)
    return value if isinstance(value, str) else None

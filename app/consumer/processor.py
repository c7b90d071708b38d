"""Process one delivery: read it, commit its effect (group commit), or route its failure. Never raises
for a bad message; raises only when the failure itself could not be recorded, so the broker redelivers."""

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from app.consumer.committer import GroupCommitter
from app.consumer.delivery import Delivery
from app.consumer.failures import FailureRouter
from app.consumer.intake import read_payment
from app.errors import RemitError, RetryableError
from contracts import PaymentMessage

log = logging.getLogger("remit.consumer")


class PaymentProcessor:
    def __init__(
        self,
        committer: GroupCommitter,
        failures: FailureRouter,
        max_message_bytes: int,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._committer = committer
        self._failures = failures
        self._max_bytes = max_message_bytes
        self._clock = clock

    async def process(self, delivery: Delivery) -> str:
        payment: PaymentMessage | None = None
        try:
            payment = read_payment(delivery, self._clock(), self._max_bytes)
            outcome = await self._committer.commit(payment, attempt=payment.retry_count + 1)
            return outcome.value
        except RemitError as error:
            return await self._fail(delivery, payment, error)
        except Exception as exc:  # unknown failures are treated as retryable, never as success
            return await self._fail(delivery, payment, RetryableError(f"{type(exc).__name__}: {exc}"))

    async def _fail(self, delivery: Delivery, payment: PaymentMessage | None, error: RemitError) -> str:
        outcome = await self._failures.handle(delivery, payment, error, self._clock())
        log.warning(
            "payment %s: %s (%s: %s)",
            payment.message_id if payment else delivery.message_id,
            outcome,
            type(error).__name__,
            error,
            extra={
                "message_id": str(payment.message_id) if payment else delivery.message_id,
                "tenant_id": payment.tenant_id if payment else None,
                "correlation_id": payment.correlation_id if payment else None,
                "attempt": payment.retry_count + 1 if payment else 1,
            },
        )
        return outcome

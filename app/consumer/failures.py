"""Where a failed delivery goes: back round a delay queue, or to the dead-letter exchange, with its reason.

The attempt is written to PostgreSQL first; only then is the message republished (with confirms) and the
original acked. If either step fails the handler raises and the delivery is returned to the queue.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from sqlalchemy import insert

from app.consumer.delivery import Delivery
from app.errors import RemitError
from app.messaging import headers
from app.storage.tables import delivery_attempts
from app.storage.unit_of_work import UnitOfWorkFactory
from contracts import PaymentMessage


class Republisher(Protocol):
    async def to_retry(self, payment: PaymentMessage, delivery: Delivery, level: int, now: datetime) -> None: ...

    async def to_dead_letters(self, delivery: Delivery, extra_headers: Mapping[str, Any]) -> None: ...


@dataclass(frozen=True, slots=True)
class FailureOutcome:
    outcome: str  # "retrying" or "dead_lettered"
    reason: str | None  # the dead-letter reason, None while retrying


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    delays_seconds: tuple[float, ...]
    max_retries: int

    def level_for(self, retry_count: int) -> int | None:
        """The delay queue for the next retry, or None when the retries are used up."""
        if retry_count >= self.max_retries or not self.delays_seconds:
            return None
        return min(retry_count, len(self.delays_seconds) - 1)


class FailureRouter:
    def __init__(self, uow_factory: UnitOfWorkFactory, republisher: Republisher, policy: RetryPolicy) -> None:
        self._uow_factory = uow_factory
        self._republisher = republisher
        self._policy = policy

    async def handle(
        self, delivery: Delivery, payment: PaymentMessage | None, error: RemitError, now: datetime
    ) -> FailureOutcome:
        """Record the failure, then retry or dead-letter the message."""
        level = self._policy.level_for(payment.retry_count) if payment and error.retryable else None
        outcome = "retrying" if level is not None else "dead_lettered"
        attempt = payment.retry_count + 1 if payment else 1
        await self._record(delivery, payment, error, attempt, outcome, now)
        if payment is not None and level is not None:
            await self._republisher.to_retry(payment.with_retry(), delivery, level, now)
            return FailureOutcome(outcome, None)
        reason = error.reason if not error.retryable else "retries_exhausted"
        await self._republisher.to_dead_letters(delivery, _dead_letter_headers(reason, error, attempt, now))
        return FailureOutcome(outcome, reason)

    async def _record(
        self,
        delivery: Delivery,
        payment: PaymentMessage | None,
        error: RemitError,
        attempt: int,
        outcome: str,
        now: datetime,
    ) -> None:
        async with self._uow_factory() as uow:
            await uow.connection.execute(
                insert(delivery_attempts).values(
                    message_id=payment.message_id if payment else _uuid_or_none(delivery.message_id),
                    tenant_id=payment.tenant_id if payment else _str_or_none(delivery.headers.get(headers.TENANT)),
                    attempt=attempt,
                    outcome=outcome,
                    error_type=type(error).__name__,
                    error_message=str(error)[:2000],
                    queue=delivery.queue,
                    at=now,
                )
            )
            await uow.commit()


def _dead_letter_headers(reason: str, error: RemitError, attempt: int, now: datetime) -> dict[str, Any]:
    return {
        headers.REASON: reason,
        headers.ERROR_TYPE: type(error).__name__,
        headers.ERROR_MESSAGE: str(error)[:2000],
        headers.ATTEMPTS: attempt,
        headers.FAILED_AT: now.isoformat(),
    }


def _uuid_or_none(value: str | None) -> UUID | None:
    try:
        return UUID(value) if value else None
    except ValueError:
        return None


def _str_or_none(value: object) -> str | None:
    return value[:32] if isinstance(value, str) else None

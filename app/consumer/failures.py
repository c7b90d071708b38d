"""Where a failed delivery goes: back round a delay queue, or to the dead-letter exchange, with its reason.

The attempt is written to PostgreSQL first; only then is the message republished (with confirms) and the
original acked. If either step fails the handler raises and the delivery is returned to the queue.

Both carry who really published the delivery and the tenant that identity decided (app/tenancy/identity.py),
never what its bytes claim: a direct publisher's own `remit-*` headers travel on only as claims.
"""

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from app.consumer.delivery import Delivery
from app.errors import MessageFailure, TenantMismatch
from app.logs import mask_text
from app.messaging import headers
from app.storage.ports.attempts import AttemptRecord
from app.storage.text import storable
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.identity import PublisherIdentity
from contracts import PaymentMessage

log = logging.getLogger("remit.consumer")

MAX_ERROR_CHARS = 2000


class Republisher(Protocol):
    async def to_retry(
        self, payment: PaymentMessage, delivery: Delivery, level: int, now: datetime, origin: Mapping[str, Any]
    ) -> None: ...

    async def to_dead_letters(self, delivery: Delivery, message_headers: Mapping[str, Any]) -> None: ...


@dataclass(frozen=True, slots=True)
class FailureOutcome:
    outcome: str  # "retrying" or "dead_lettered"
    reason: str | None  # the dead-letter reason, None while retrying
    tenant: str | None  # the tenant identity decided (not the one the message claims)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    delays_seconds: tuple[float, ...]
    max_retries: int

    def level_for(self, retry_count: int) -> int | None:
        """The delay queue for the next retry, or None when the retries are used up."""
        if retry_count >= self.max_retries or not self.delays_seconds:
            return None
        return min(retry_count, len(self.delays_seconds) - 1)


@dataclass(frozen=True, slots=True)
class Origin:
    """Who published a delivery and whose it is. A retry we published ourselves carries both from the
    first delivery, so they survive every trip round the delay queues."""

    trusted: bool
    published_by: str | None
    tenant: str | None
    # The dead letter this delivery is a replay of: its retries carry it, so that a replay failing after a trip
    # round the delay queues is filed as the new failure it is, not folded into the dead letter it replayed.
    replay_of: int | None = None

    @classmethod
    def of(cls, delivery: Delivery, identity: PublisherIdentity) -> "Origin":
        trusted = identity.is_trusted(delivery.user_id)
        carried = delivery.headers.get(headers.PUBLISHED_BY) if trusted else None
        replay_of = delivery.headers.get(headers.REPLAY_OF) if trusted else None
        tenant = identity.attribute(delivery.user_id, delivery.routing_key, delivery.headers).tenant
        return cls(
            trusted,
            carried if isinstance(carried, str) else delivery.user_id,
            tenant,
            replay_of if isinstance(replay_of, int) and not isinstance(replay_of, bool) else None,
        )

    def headers(self) -> dict[str, str | int]:
        values = {
            headers.PUBLISHED_BY: self.published_by,
            headers.IDENTITY_TENANT: self.tenant,
            headers.REPLAY_OF: self.replay_of,
        }
        return {name: value for name, value in values.items() if value is not None}


class FailureRouter:
    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        republisher: Republisher,
        policy: RetryPolicy,
        identity: PublisherIdentity,
        *,
        after_dead_letter: Callable[[], None] = lambda: None,
    ) -> None:
        self._uow_factory = uow_factory
        self._republisher = republisher
        self._policy = policy
        self._identity = identity
        self._after_dead_letter = after_dead_letter

    async def handle(
        self, delivery: Delivery, payment: PaymentMessage | None, error: MessageFailure, now: datetime
    ) -> FailureOutcome:
        """Record the failure, then retry or dead-letter the message."""
        origin = Origin.of(delivery, self._identity)
        level = self._policy.level_for(payment.retry_count) if payment and error.retryable else None
        outcome = "retrying" if level is not None else "dead_lettered"
        attempt = payment.retry_count + 1 if payment else 1
        await self._record(delivery, payment, error, attempt, outcome, now, origin.tenant)
        if payment is not None and level is not None:
            await self._republisher.to_retry(payment.with_retry(), delivery, level, now, origin.headers())
            return FailureOutcome(outcome, None, origin.tenant)
        reason = error.reason if not error.retryable else "retries_exhausted"
        if isinstance(error, TenantMismatch):
            _log_security_event(delivery, origin, error)
        failure = _failure_headers(reason, error, attempt, now)
        await self._republisher.to_dead_letters(delivery, dead_letter_headers(delivery, origin, failure))
        self._after_dead_letter()  # a fault point (tests): the dead letter is out, the delivery not yet acked
        return FailureOutcome(outcome, reason, origin.tenant)

    async def _record(
        self,
        delivery: Delivery,
        payment: PaymentMessage | None,
        error: MessageFailure,
        attempt: int,
        outcome: str,
        now: datetime,
        tenant: str | None,
    ) -> None:
        record = AttemptRecord(
            message_id=payment.message_id if payment else _uuid_or_none(delivery.message_id),
            tenant_id=tenant,
            attempt=attempt,
            outcome=outcome,
            error_type=type(error).__name__,
            error_message=error_text(error),
            queue=delivery.queue,
            at=now,
        )
        async with self._uow_factory() as uow:
            await uow.attempts.record(record)
            await uow.commit()


def _log_security_event(delivery: Delivery, origin: Origin, error: MessageFailure) -> None:
    log.warning(
        "security event: quarantined a message published by %s, filed under tenant %s (%s)",
        origin.published_by or "nobody (no user_id)",
        origin.tenant,
        error_text(error),
        extra={"tenant_id": origin.tenant, "message_id": delivery.message_id},
    )


def error_text(error: MessageFailure) -> str:
    """What a header, a table or a log line may say about an error: masked, then cut (in that order, so a
    cut never leaves half an account number unmasked), and storable: a validation error may quote a key
    of the body, NUL included, which PostgreSQL refuses (the failure could then never be recorded)."""
    return storable(mask_text(str(error)), MAX_ERROR_CHARS)


def dead_letter_headers(delivery: Delivery, origin: Origin, failure: Mapping[str, Any]) -> dict[str, Any]:
    """The original headers as evidence, our verdict, and the delivery's identity. `remit-*` headers a
    trusted publisher sent are ours and pass through; anyone else's move under `remit-claims`."""
    own = {k: v for k, v in delivery.headers.items() if not k.startswith(headers.PREFIX)}
    claims = {k: v for k, v in delivery.headers.items() if k.startswith(headers.PREFIX)}
    if origin.trusted:
        own, claims = dict(delivery.headers), {}
    return {
        **own,
        **({headers.CLAIMS: claims} if claims else {}),
        **failure,
        **origin.headers(),
        headers.ORIGINAL_QUEUE: delivery.queue,
    }


def _failure_headers(reason: str, error: MessageFailure, attempt: int, now: datetime) -> dict[str, Any]:
    return {
        headers.REASON: reason,
        headers.ERROR_TYPE: type(error).__name__,
        headers.ERROR_MESSAGE: error_text(error),
        headers.ATTEMPTS: attempt,
        headers.FAILED_AT: now.isoformat(),
    }


def _uuid_or_none(value: str | None) -> UUID | None:
    try:
        return UUID(value) if value else None
    except ValueError:
        return None

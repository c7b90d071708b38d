"""A republisher that keeps what the consumer would publish to the delay queues and the dead-letter exchange."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from app.consumer.delivery import Delivery
from contracts import PaymentMessage


@dataclass(frozen=True, slots=True)
class Retried:
    payment: PaymentMessage  # as republished: retry_count already + 1
    delivery: Delivery
    level: int
    origin: Mapping[str, Any]
    now: datetime  # when it failed: the retry's remaining TTL (its AMQP expiration) counts from here


@dataclass(frozen=True, slots=True)
class DeadLettered:
    delivery: Delivery
    headers: Mapping[str, Any]


@dataclass
class FakeRepublisher:
    retried: list[Retried] = field(default_factory=list)
    dead_lettered: list[DeadLettered] = field(default_factory=list)
    fail: bool = False  # the broker refuses every publish (unroutable, channel closed)

    @property
    def published(self) -> list[Retried | DeadLettered]:
        """Everything published, retries first."""
        return [*self.retried, *self.dead_lettered]

    async def to_retry(
        self, payment: PaymentMessage, delivery: Delivery, level: int, now: datetime, origin: Mapping[str, Any]
    ) -> None:
        self._refuse_if_failing()
        self.retried.append(Retried(payment, delivery, level, origin, now))

    async def to_dead_letters(self, delivery: Delivery, message_headers: Mapping[str, Any]) -> None:
        self._refuse_if_failing()
        self.dead_lettered.append(DeadLettered(delivery, message_headers))

    def _refuse_if_failing(self) -> None:
        if self.fail:
            raise ConnectionError("the broker did not confirm the publish")

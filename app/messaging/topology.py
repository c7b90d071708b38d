"""The broker topology remit owns.

- `payments` (topic): every payment, routing key `<tenant_id>.payment`. Each tenant's key is bound to
  exactly one work queue: its tier's shared queue `payments.work.<tier>`, or its dedicated queue
  `payments.work.tenant.<tenant_id>`. There is no wildcard binding: a key nobody bound is unroutable,
  and publishers with confirms + mandatory see that at once.
- Delay queues `payments.retry.<delay>ms`, each behind its own fanout exchange: the consumer republishes
  a retry there with the tenant's routing key; when the delay runs out the broker dead-letters it back to
  `payments` with that key, so it lands in the tenant's current work queue, even after a tier change.
- `payments.dlx` (fanout) -> `payments.dlq`: dead letters, for the archiver.

Every queue is a durable quorum queue with at-least-once dead-lettering (which on quorum queues needs
x-overflow=reject-publish, or the broker silently falls back to at-most-once). The dead-letter queue has
no delivery limit, so a dead letter can never be dropped by the broker.
"""

from dataclasses import dataclass
from typing import Any

import aio_pika
from aio_pika.abc import AbstractChannel

from app.settings import Settings
from contracts.message import TENANT_ID_PATTERN

PAYMENT_KEY_SUFFIX = "payment"
TENANT_KEY_PATTERN = TENANT_ID_PATTERN  # never a dot or a wildcard, so safe as a routing-key word
TIERS = ("free", "basic", "premium", "enterprise")


def routing_key(tenant_id: str) -> str:
    return f"{tenant_id}.{PAYMENT_KEY_SUFFIX}"


_SAFE_QUORUM = {"x-queue-type": "quorum", "x-overflow": "reject-publish"}


@dataclass(frozen=True, slots=True)
class Topology:
    exchange: str
    work_queue: str  # the prefix of every work queue
    dead_letter_exchange: str
    dead_letter_queue: str
    retry_delays_seconds: tuple[float, ...]
    delivery_limit: int

    @classmethod
    def from_settings(cls, settings: Settings) -> "Topology":
        return cls(
            exchange=settings.exchange,
            work_queue=settings.work_queue,
            dead_letter_exchange=settings.dead_letter_exchange,
            dead_letter_queue=settings.dead_letter_queue,
            retry_delays_seconds=tuple(settings.retry_delays_seconds),
            delivery_limit=settings.delivery_limit,
        )

    def tier_queue(self, tier: str) -> str:
        return f"{self.work_queue}.{tier}"

    def dedicated_queue(self, tenant_id: str) -> str:
        return f"{self.work_queue}.tenant.{tenant_id}"

    def queue_for(self, tenant_id: str, tier: str, dedicated: bool) -> str:
        return self.dedicated_queue(tenant_id) if dedicated else self.tier_queue(tier)

    def work_queue_arguments(self) -> dict[str, Any]:
        return {
            **_SAFE_QUORUM,
            "x-dead-letter-exchange": self.dead_letter_exchange,
            "x-dead-letter-strategy": "at-least-once",
            "x-delivery-limit": self.delivery_limit,
        }

    def retry_queue(self, level: int) -> str:
        # Named by its delay, not its level: changing the delays declares new queues instead of clashing
        # with the old ones (PRECONDITION_FAILED), and the old ones still drain back to `payments`.
        return f"{self.exchange}.retry.{self._delay_ms(level)}ms"

    def _delay_ms(self, level: int) -> int:
        return int(self.retry_delays_seconds[level] * 1000)

    def retry_queue_arguments(self, level: int) -> dict[str, Any]:
        return {
            **_SAFE_QUORUM,
            "x-message-ttl": self._delay_ms(level),
            "x-dead-letter-exchange": self.exchange,  # keeps the message's own `<tenant>.payment` key
            "x-dead-letter-strategy": "at-least-once",
        }


async def declare_work_queue(channel: AbstractChannel, topology: Topology, name: str) -> aio_pika.abc.AbstractQueue:
    return await channel.declare_queue(name, durable=True, arguments=topology.work_queue_arguments())


async def declare_topology(channel: AbstractChannel, topology: Topology) -> None:
    await channel.declare_exchange(topology.exchange, aio_pika.ExchangeType.TOPIC, durable=True)
    dlx = await channel.declare_exchange(topology.dead_letter_exchange, aio_pika.ExchangeType.FANOUT, durable=True)
    dlq = await channel.declare_queue(topology.dead_letter_queue, durable=True, arguments={"x-queue-type": "quorum"})
    await dlq.bind(dlx)
    for tier in TIERS:
        await declare_work_queue(channel, topology, topology.tier_queue(tier))
    for level in range(len(topology.retry_delays_seconds)):
        name = topology.retry_queue(level)
        retry_exchange = await channel.declare_exchange(name, aio_pika.ExchangeType.FANOUT, durable=True)
        queue = await channel.declare_queue(name, durable=True, arguments=topology.retry_queue_arguments(level))
        await queue.bind(retry_exchange)

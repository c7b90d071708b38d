"""The broker topology remit owns: the payments exchange, the work queue, its delay queues and the DLQ.

Every queue is a durable quorum queue. Dead-lettering is at-least-once (which on quorum queues needs
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


def routing_key(tenant_id: str) -> str:
    return f"{tenant_id}.{PAYMENT_KEY_SUFFIX}"


_SAFE_QUORUM = {"x-queue-type": "quorum", "x-overflow": "reject-publish"}


@dataclass(frozen=True, slots=True)
class Topology:
    exchange: str
    work_queue: str
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

    @property
    def work_binding_key(self) -> str:
        return f"*.{PAYMENT_KEY_SUFFIX}"

    def work_queue_arguments(self) -> dict[str, Any]:
        return {
            **_SAFE_QUORUM,
            "x-dead-letter-exchange": self.dead_letter_exchange,
            "x-dead-letter-strategy": "at-least-once",
            "x-delivery-limit": self.delivery_limit,
        }

    def retry_queue(self, level: int) -> str:
        # Named by its delay, not its level: changing the delays declares new queues instead of clashing
        # with the old ones (PRECONDITION_FAILED), and the old ones still drain back to the work queue.
        return f"{self.work_queue}.retry.{self._delay_ms(level)}ms"

    def _delay_ms(self, level: int) -> int:
        return int(self.retry_delays_seconds[level] * 1000)

    def retry_queue_arguments(self, level: int) -> dict[str, Any]:
        # When the delay runs out the broker dead-letters the message straight back to the work queue.
        return {
            **_SAFE_QUORUM,
            "x-message-ttl": self._delay_ms(level),
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": self.work_queue,
            "x-dead-letter-strategy": "at-least-once",
        }


async def declare_topology(channel: AbstractChannel, topology: Topology) -> None:
    exchange = await channel.declare_exchange(topology.exchange, aio_pika.ExchangeType.TOPIC, durable=True)
    dlx = await channel.declare_exchange(topology.dead_letter_exchange, aio_pika.ExchangeType.FANOUT, durable=True)
    dlq = await channel.declare_queue(topology.dead_letter_queue, durable=True, arguments={"x-queue-type": "quorum"})
    await dlq.bind(dlx)
    work = await channel.declare_queue(topology.work_queue, durable=True, arguments=topology.work_queue_arguments())
    await work.bind(exchange, routing_key=topology.work_binding_key)
    for level in range(len(topology.retry_delays_seconds)):
        await channel.declare_queue(
            topology.retry_queue(level), durable=True, arguments=topology.retry_queue_arguments(level)
        )

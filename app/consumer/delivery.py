"""What the consumer knows about one delivery, independent of the AMQP client library."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Delivery:
    body: bytes
    queue: str
    headers: Mapping[str, Any] = field(default_factory=dict)
    content_type: str | None = None
    message_id: str | None = None
    user_id: str | None = None
    redelivered: bool = False
    routing_key: str | None = None

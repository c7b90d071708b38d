"""What the consumer knows about one delivery, independent of the AMQP client library."""

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.messaging import headers
from app.messaging.lenient_properties import Unreadable

Trusts = Callable[[str | None], bool]  # whether a user_id is a trusted publisher (remit's own login)


def trusts_nobody(user_id: str | None) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Truncated:
    """The body was cut to a prefix on arrival; what was published was this long, with this SHA-256."""

    length: int
    sha256: str


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
    truncated: Truncated | None = None
    unreadable: Unreadable | None = None  # its properties could not all be read (app/messaging/amqp_guard.py)

    def published_at(self, trusts: Trusts) -> float | None:
        """The relay's publish stamp in epoch seconds; None when absent or not a finite number, and from a
        publisher remit does not trust (a direct publisher's stamp is a claim, not a time)."""
        return headers.published_at(self.headers) if trusts(self.user_id) else None

    @property
    def size(self) -> int:
        """The body's size as published, even when only a prefix of it was kept."""
        return self.truncated.length if self.truncated else len(self.body)

    def evidence_headers(self) -> dict[str, Any]:
        """What a republished copy says about what it could not carry as it came: a body cut on arrival,
        properties that could not be read. Nothing when both are whole."""
        said: dict[str, Any] = {}
        if self.truncated is not None:
            said |= {
                headers.BODY_TRUNCATED: True,
                headers.BODY_LENGTH: self.truncated.length,
                headers.BODY_SHA256: self.truncated.sha256,
            }
        if self.unreadable is not None:
            said |= {
                headers.PROPERTIES_UNREADABLE: self.unreadable.why,
                headers.PROPERTIES_LENGTH: self.unreadable.length,
                headers.PROPERTIES_SHA256: self.unreadable.sha256,
            }
        return said


@dataclass(frozen=True, slots=True)
class BodyLimits:
    """How many bytes of a delivery the consumer holds: a body over `cap` is cut to its first `prefix`
    bytes on arrival, so each delivery held costs at most max(cap, prefix); a pool holds at most
    `pool_bytes` of them."""

    cap: int
    prefix: int
    pool_bytes: int

    def keep(self, body: bytes) -> tuple[bytes, Truncated | None]:
        if len(body) <= self.cap:
            return body, None
        return body[: self.prefix], Truncated(len(body), hashlib.sha256(body).hexdigest())

    def window(self, deliveries: int) -> int:
        """A pool's window: the deliveries asked for, but never more than its bytes allow."""
        return max(1, min(deliveries, self.pool_bytes // max(self.cap, self.prefix)))

"""What the archiver makes of one delivery from the dead-letter queue: a row for the dead-letter store.

Nothing here may raise on odd input. A dead letter is evidence: it is stored as it came (its body cut to
a bounded prefix, with the full length and SHA-256), with NULLs where a field cannot be read, and with a
reason even when nobody gave one.

Who published it decides what is believed (app/tenancy/identity.py). Our `remit-*` headers are believed
only from a trusted publisher (the consumer dead-letters as the service's login). From anyone else (the
broker dead-lettered a tenant's own message on expiry or delivery limit, and the tenant's user_id stays
on it) they are stored apart as claims: the reason comes from `x-death` alone and the tenant from the
publisher's identity.
"""

import base64
import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from app.consumer.digest import payment_digest
from app.deadletters import reasons
from app.messaging import headers as h
from app.messaging.lenient_properties import Unreadable
from app.storage.text import storable
from app.tenancy.identity import PublisherIdentity
from contracts import PaymentMessage

MAX_DEPTH = 16
INT32_MAX = 2**31 - 1
BIGINT_MAX = 2**63 - 1
SHA256_HEX = 64


@dataclass(frozen=True, slots=True)
class IncomingDeadLetter:
    body: bytes
    headers: Mapping[str, Any] = field(default_factory=dict)
    message_id: str | None = None
    correlation_id: str | None = None
    user_id: str | None = None  # validated by RabbitMQ: who published the message (or dead-lettered it)
    routing_key: str | None = None  # the key it was published with


@dataclass(frozen=True, slots=True)
class Archiving:
    """What the archiver needs besides the delivery: whom to believe, and how much body to keep."""

    identity: PublisherIdentity
    body_max_bytes: int


def to_row(incoming: IncomingDeadLetter, now: datetime, archiving: Archiving) -> dict[str, Any]:
    """The dead_letters row for one delivery (first_failed_at is settled by the store)."""
    raw = dict(incoming.headers) if isinstance(incoming.headers, Mapping) else {}
    unreadable = Unreadable.taken_from(raw)  # the archiver's own read of its properties (app/messaging/amqp_guard.py)
    trusted = archiving.identity.is_trusted(incoming.user_id)
    believed, claims = split_claims(raw, trusted)
    if unreadable is not None:
        believed |= unreadable_headers(unreadable)
    death = latest_death(raw)
    reason = reason_of(believed, death)
    failed_at, event = failure_event(believed, death, now)
    attribution = archiving.identity.attribute(incoming.user_id, incoming.routing_key, believed)
    body = bounded_body(incoming.body, believed, archiving.body_max_bytes)
    fields = body_fields(incoming.body) if not body.truncated else {}
    message_id = as_uuid(incoming.message_id) or as_uuid(fields.get("message_id"))
    error_type, error_message = error_of(believed, death, reason)
    claimed = claimed_tenant(attribution.tenant, raw.get(h.TENANT), fields.get("tenant_id"))
    security_event = reason == reasons.TENANT_MISMATCH or claimed is not None or bool(claims)
    moves = None if body.truncated else digest_of(incoming.body)
    replay_of = small_int(believed.get(h.REPLAY_OF), BIGINT_MAX)
    if message_id is None:
        # Not a payment (every payment has a message_id): no attempt chain to follow, only this failure event.
        # The body is part of it: two different messages failing in the same second are two dead letters.
        event_hash = hashlib.sha256(f"{event}|{body.sha256}".encode()).hexdigest()[:32]
        key = f"{attribution.tenant or '-'}|sha256:{body.sha256}|{reason}|{event_hash}"
    else:
        moved = moves.hex() if moves is not None else "sha256:" + body.sha256
        key = dedup_key(attribution.tenant, str(message_id), moved, replay_of, reason if security_event else None)
    return {
        "dedup_key": key,
        "message_id": message_id,
        "tenant_id": attribution.tenant,
        "tenant_basis": attribution.basis,
        "published_by": clean(published_by(believed, incoming.user_id, trusted), 255),
        "claimed_tenant": claimed,
        "claims": json_safe(claims),
        "security_event": security_event,
        "correlation_id": clean(as_text(incoming.correlation_id), 64)
        or clean(as_text(fields.get("correlation_id")), 64),
        "payment_reference": clean(as_text(fields.get("payment_reference")), 200),
        "amount_cents": amount_of(fields.get("amount_cents")),
        "currency": currency_of(fields.get("currency")),
        "reason": reason,
        "error_type": clean(error_type, 200),
        "error_message": clean(error_message, 4000),
        "attempts": attempts_of(believed, death),
        "last_failed_at": failed_at,
        "original_queue": clean(as_text(believed.get(h.ORIGINAL_QUEUE)), 255)
        or clean(as_text(death.get("queue") if death else None), 255),
        "body": body.stored,
        "body_length": body.length,
        "body_sha256": body.sha256,
        "body_truncated": body.truncated,
        "headers": json_safe(dict(believed)),
        "replay_of": replay_of,
        # Compared with the tenant's idempotency record (already_processed); never for a security event or a reused
        # id: their records are another payment's.
        "payment_digest": None if security_event or reason == reasons.DUPLICATE_CONFLICT else moves,
    }


def dedup_key(tenant: str | None, message_id: str, moves: str, replay_of: int | None, quarantined: str | None) -> str:
    """What makes two deliveries of a payment one dead letter: the same failed attempt chain, whenever and however
    often it failed.

    - The tenant: another tenant's dead letter of the same message_id can never take this one's place.
    - The message_id and what it moves (the payment digest, which a retry's retry_count does not change; else the
      body's SHA-256): a different payment under a reused id is its own dead letter.
    - The attempt chain: the one that began with the message's first publish, or the replay of a dead letter
      (`remit-replay-of`, believed from a trusted publisher only). A copy dead-lettered again after a crash before
      its ack, a redelivered refusal the core replays, a copy the broker expired or dead-lettered at its delivery
      limit: all the same chain, so one dead letter, which the store updates. An operator's replay that fails is
      a new one.
    - For a security event, its reason: a quarantined copy never hides in an ordinary failure of the same payment.

    Not the failure's time or reason: those differ between copies of one failure (the consumer's clock, the
    broker's x-death entry)."""
    chain = f"replay:{replay_of}" if replay_of is not None else "first"
    key = f"{tenant or '-'}|{message_id}|{moves}|{chain}"
    return f"{key}|security:{quarantined}" if quarantined is not None else key


def split_claims(raw: Mapping[str, Any], trusted: bool) -> tuple[dict[str, Any], Any]:
    """(the headers to believe, the claims kept as evidence). A trusted publisher's `remit-*` headers are
    ours, and its `remit-claims` table holds what an untrusted delivery claimed before it dead-lettered it;
    anyone else's `remit-*` headers are claims."""
    if trusted:
        believed = {k: v for k, v in raw.items() if k != h.CLAIMS}
        claims = raw.get(h.CLAIMS)
        return believed, claims if isinstance(claims, Mapping) else {}
    believed = {k: v for k, v in raw.items() if not str(k).startswith(h.PREFIX)}
    return believed, {k: v for k, v in raw.items() if str(k).startswith(h.PREFIX)}


def unreadable_headers(unreadable: Unreadable) -> dict[str, Any]:
    return {
        h.PROPERTIES_UNREADABLE: unreadable.why,
        h.PROPERTIES_LENGTH: unreadable.length,
        h.PROPERTIES_SHA256: unreadable.sha256,
    }


def published_by(believed: Mapping[str, Any], user_id: str | None, trusted: bool) -> str | None:
    """The consumer names the original publisher of what it dead-letters; otherwise the login that did."""
    named = as_text(believed.get(h.PUBLISHED_BY)) if trusted else None
    return named or user_id


def claimed_tenant(tenant: str | None, *claims: object) -> str | None:
    """The first tenant the bytes claim (tenantUUID header, then the body) that is not the real one."""
    for claim in claims:
        text = clean(as_text(claim), 32)
        if text and text != tenant:
            return text
    return None


@dataclass(frozen=True, slots=True)
class Body:
    stored: bytes
    length: int
    sha256: str
    truncated: bool


def bounded_body(body: bytes, believed: Mapping[str, Any], limit: int) -> Body:
    """At most `limit` bytes of the body, with the full length and SHA-256. A trusted publisher that
    already cut it says what the whole was (remit-body-*); those values are kept."""
    length = small_int(believed.get(h.BODY_LENGTH), BIGINT_MAX)
    digest = as_text(believed.get(h.BODY_SHA256))
    if truthy(believed.get(h.BODY_TRUNCATED)) and length is not None and digest and len(digest) == SHA256_HEX:
        return Body(body[:limit], length, digest.lower(), True)
    return Body(body[:limit], len(body), hashlib.sha256(body).hexdigest(), len(body) > limit)


def truthy(value: object) -> bool:
    return value is True or value == 1 or (as_text(value) or "").strip().lower() in {"true", "1", "yes"}


def latest_death(raw: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The x-death entry that put the message here: the broker keeps the most recent first."""
    deaths = raw.get("x-death")
    if isinstance(deaths, list | tuple) and deaths and isinstance(deaths[0], Mapping):
        return deaths[0]
    return None


def reason_of(raw: Mapping[str, Any], death: Mapping[str, Any] | None) -> str:
    # The consumer's own verdict wins: a message it dead-lettered may still carry x-death entries
    # from earlier trips round the delay queues.
    ours = clean(as_text(raw.get(h.REASON)), 32)
    if ours:
        return ours
    if death is not None:
        return reasons.BROKER_REASONS.get(as_text(death.get("reason")) or "", reasons.UNKNOWN)
    if raw.get(h.PROPERTIES_UNREADABLE) is not None:
        return reasons.UNREADABLE_PROPERTIES  # nothing that could be read says why it is here
    return reasons.UNKNOWN


def failure_event(raw: Mapping[str, Any], death: Mapping[str, Any] | None, now: datetime) -> tuple[datetime, str]:
    """When it failed, and a string naming this failure event (the same on every redelivery)."""
    stamp = as_text(raw.get(h.FAILED_AT))
    if stamp:
        return (parse_time(stamp) or now), f"at:{stamp}"
    if death is not None:
        at = death.get("time")
        # Never later than now: on 3.10 an entry the publisher supplied keeps its own time.
        when = min(to_utc(at), now) if isinstance(at, datetime) else now
        event = f"x-death:{death.get('queue')}:{death.get('reason')}:{at}:{death.get('count')}"
        return when, event
    # Nothing says when: the headers as a whole stand for the event, so a redelivery still dedups.
    return now, "headers:" + json.dumps(json_safe(dict(raw)), sort_keys=True)


def error_of(raw: Mapping[str, Any], death: Mapping[str, Any] | None, reason: str) -> tuple[str | None, str | None]:
    error_type = as_text(raw.get(h.ERROR_TYPE))
    error_message = as_text(raw.get(h.ERROR_MESSAGE))
    if error_type or error_message:
        return error_type, error_message
    unreadable = as_text(raw.get(h.PROPERTIES_UNREADABLE))
    if unreadable is not None and death is None:
        return "UnreadableProperties", f"AMQP properties unreadable ({unreadable})"
    if death is not None:
        return "BrokerDeadLetter", (
            f"RabbitMQ dead-lettered it from queue {as_text(death.get('queue'))!r} "
            f"(x-death reason {as_text(death.get('reason'))!r}, count {death.get('count')})"
        )
    if reason == reasons.UNKNOWN:
        return None, "no remit-reason and no x-death header: published to the dead-letter exchange directly"
    return None, None


def attempts_of(raw: Mapping[str, Any], death: Mapping[str, Any] | None) -> int:
    ours = small_int(raw.get(h.ATTEMPTS), INT32_MAX)
    if ours is not None:
        return max(ours, 0)
    if death is not None and death.get("reason") == "delivery_limit":
        # x-delivery-count is absent on the first delivery and counts redeliveries after it.
        redeliveries = small_int(raw.get("x-delivery-count"), INT32_MAX)
        return (redeliveries or 0) + 1
    return 0


def digest_of(body: bytes) -> bytes | None:
    """What the body moves (app/consumer/digest.py), when it is a payment."""
    try:
        return payment_digest(PaymentMessage.from_wire(body))
    except (ValueError, RecursionError):  # pydantic's ValidationError included: not a payment
        return None


def body_fields(body: bytes) -> dict[str, Any]:
    """The body's JSON object, or {} when it is not one."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def amount_of(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= BIGINT_MAX:
        return value
    return None


def currency_of(value: object) -> str | None:
    return value if isinstance(value, str) and len(value) == 3 and value.isalpha() and value.isupper() else None


def as_uuid(value: object) -> UUID | None:
    if isinstance(value, UUID):
        return value
    text = as_text(value)
    try:
        return UUID(text) if text else None
    except ValueError:
        return None


def as_text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return None


def small_int(value: object, limit: int) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and -limit <= value <= limit:
        return value
    text = as_text(value)
    if text and text.strip().lstrip("-").isdigit() and len(text) < 20:
        number = int(text)
        return number if -limit <= number <= limit else None
    return None


def clean(text: str | None, limit: int) -> str | None:
    """Text PostgreSQL accepts: no NUL, no lone surrogates, at most `limit` characters."""
    return (storable(text, limit) or None) if text else None


def parse_time(text: str) -> datetime | None:
    try:
        return to_utc(datetime.fromisoformat(text.strip()))
    except (ValueError, OverflowError):
        return None


def to_utc(value: datetime) -> datetime:
    # AMQP timestamps arrive naive; they are UTC by definition.
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def json_safe(value: Any, depth: int = 0) -> Any:
    """AMQP header values (bytes, datetimes, decimals, nested tables) as JSON PostgreSQL can store."""
    if depth > MAX_DEPTH:
        return clean(repr(value), 200)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return clean(value, 100_000) or ""
    if isinstance(value, bytes):
        try:
            return clean(value.decode("utf-8"), 100_000) or ""
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(value).decode()}
    if isinstance(value, datetime):
        return to_utc(value).isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, Mapping):
        return {(clean(str(k), 1000) or "_"): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v, depth + 1) for v in value]
    return clean(repr(value), 1000)

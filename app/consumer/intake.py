"""Turn a raw delivery into a trusted PaymentMessage, or say precisely why it cannot be one."""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from pydantic import ValidationError

from app.consumer.delivery import Delivery
from app.errors import InvalidMessage, MessageExpired, MessageTooLarge, TenantMismatch, UnreadableProperties
from app.messaging import headers
from app.payment_rules import PaymentRules, size_violation
from app.storage.ports.tenants import TenantLimits
from app.tenancy.identity import PublisherIdentity
from contracts import PaymentMessage

JSON = "application/json"


@dataclass(frozen=True, slots=True)
class IntakePolicy:
    max_bytes: int  # the hard cap on any body, whoever sent it
    publishers: PublisherIdentity
    rules: PaymentRules


def read_payment(
    delivery: Delivery, policy: IntakePolicy, tenants: Mapping[str, TenantLimits], now: datetime
) -> PaymentMessage:
    """Everything but the TTL, which needs the idempotency record (see the processor)."""
    _check_envelope(delivery, policy.max_bytes)
    message = _parse(delivery.body)
    _check_identity(delivery, message)
    _check_publisher(delivery, message, policy.publishers)
    _check_rules(delivery, message, policy.rules, tenants.get(message.tenant_id), now)
    return message


def expired(message: PaymentMessage) -> MessageExpired:
    return MessageExpired(f"expired at {message.expires_at.isoformat()} (ttl {message.ttl_seconds}s)")


def _check_envelope(delivery: Delivery, max_bytes: int) -> None:
    if delivery.unreadable is not None:
        raise UnreadableProperties(delivery.unreadable.describe())
    if delivery.size > max_bytes:
        kept = f"; only its first {len(delivery.body)} bytes were kept" if delivery.truncated else ""
        raise MessageTooLarge(f"body is {delivery.size} bytes, over the {max_bytes}-byte limit{kept}")
    content_type = (delivery.content_type or "").split(";")[0].strip().lower()
    if content_type != JSON:
        raise InvalidMessage(f"content_type must be {JSON}, got {delivery.content_type!r}")


def _parse(body: bytes) -> PaymentMessage:
    try:
        return PaymentMessage.from_wire(body)
    except ValidationError as exc:
        raise InvalidMessage(_describe(exc)) from exc


def _describe(exc: ValidationError) -> str:
    parts = [f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in exc.errors()[:10]]
    return "; ".join(parts)


def _check_identity(delivery: Delivery, message: PaymentMessage) -> None:
    header_tenant = delivery.headers.get(headers.TENANT)
    if header_tenant != message.tenant_id:
        raise TenantMismatch(
            f"header {headers.TENANT}={header_tenant!r} does not match body tenant_id={message.tenant_id!r}"
        )
    if delivery.message_id is not None and not _same_id(delivery.message_id, message.message_id):
        raise InvalidMessage(
            f"AMQP message_id {delivery.message_id!r} does not match body message_id {message.message_id}"
        )


def _check_publisher(delivery: Delivery, message: PaymentMessage, publishers: PublisherIdentity) -> None:
    # RabbitMQ validates user_id against the login, so it names the real publisher; absent, it names nobody.
    if delivery.user_id is None:
        raise TenantMismatch("no AMQP user_id: the publisher cannot be authenticated")
    if not publishers.may_publish_for(delivery.user_id, message.tenant_id):
        raise TenantMismatch(f"user_id {delivery.user_id!r} may not publish for tenant {message.tenant_id!r}")


def _check_rules(
    delivery: Delivery, message: PaymentMessage, rules: PaymentRules, tenant: TenantLimits | None, now: datetime
) -> None:
    # An unknown tenant has no size limit of its own: the committer refuses its payments anyway.
    oversize = size_violation(delivery.size, tenant.max_message_bytes) if tenant is not None else None
    if oversize is not None:
        raise MessageTooLarge(oversize)
    errors = rules.violations(message, now)
    if errors:
        raise InvalidMessage("; ".join(errors))


def _same_id(amqp_id: str, body_id: UUID) -> bool:
    # Hyphens and case aside, the hex digits are the id (UUID() reads them so too); parsing is the slow path,
    # for braces and "urn:uuid:" prefixes, which UUID() also accepts.
    if amqp_id.replace("-", "").lower() == body_id.hex:
        return True
    try:
        return UUID(amqp_id) == body_id
    except ValueError:
        return False

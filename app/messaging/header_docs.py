"""What each AMQP header remit reads or writes means, who may set it and whether it is believed: the
AsyncAPI document's message headers are made from this table (app/messaging/asyncapi_extras.py), and a
unit test fails when a header in app/messaging/headers.py is missing from it."""

from typing import Any

from app.messaging import headers as h
from app.messaging.topology import TENANT_KEY_PATTERN

SERVICE = "the service's own RabbitMQ login (REMIT_AMQP_URL)"
BELIEVED = (
    f"Believed only on a message {SERVICE} or a REMIT_TRUSTED_PUBLISHERS login published; from anyone else "
    f"it is a claim, moved under `{h.CLAIMS}` on its dead letter and never acted on."
)


def _header(schema: dict[str, Any], meaning: str, set_by: str, trusted: bool = True) -> dict[str, Any]:
    trust = f" {BELIEVED}" if trusted else ""
    return {**schema, "description": f"{meaning} Set by: {set_by}.{trust}"}


_TEXT, _INT, _BOOL = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
_CONSUMER_DEAD_LETTER = f"the consumer, as {SERVICE}, when it dead-letters a delivery"
_CONSUMER_RETRY_OR_DEAD = f"the consumer, as {SERVICE}, when it retries or dead-letters a delivery"

HEADERS: dict[str, dict[str, Any]] = {
    h.TENANT: _header(
        {"type": "string", "pattern": TENANT_KEY_PATTERN},
        "The tenant. Must equal the body's tenant_id and the routing key's first word; a message whose header "
        "and body disagree is quarantined (tenant_mismatch). It never decides the tenant alone: the "
        "validated user_id does (a tenant's own login publishes for that tenant only).",
        "every publisher: the relay, retries and replays write the payment's tenant; a tenant publishing "
        "directly writes its own",
        trusted=False,
    ),
    h.PUBLISHED_AT: _header(
        _INT,
        "Epoch milliseconds of the relay's publish, for the publish-to-processed latency.",
        f"the relay, as {SERVICE}",
    ),
    h.REPLAY_OF: _header(
        _INT,
        "The id of the dead letter this message replays.",
        f"`remit dlq replay` and the admin API's replay, as {SERVICE}",
    ),
    h.ORIGINAL_QUEUE: _header(_TEXT, "The work queue the failed delivery came from.", _CONSUMER_RETRY_OR_DEAD),
    h.PUBLISHED_BY: _header(
        _TEXT,
        "The validated user_id of whoever first published the payment (absent: it had none); carried "
        "unchanged through every retry.",
        _CONSUMER_RETRY_OR_DEAD,
    ),
    h.IDENTITY_TENANT: _header(
        {"type": "string", "pattern": TENANT_KEY_PATTERN},
        "The tenant the publisher's identity decided (app/tenancy/identity.py): whose retry or dead letter it is.",
        _CONSUMER_RETRY_OR_DEAD,
    ),
    h.REASON: _header(
        _TEXT,
        "Why it was dead-lettered (invalid, oversize, over_limit, tenant_suspended, tenant_mismatch, "
        "duplicate_conflict, unknown_tenant, account_closed, unknown_account, insufficient_funds, "
        "currency_not_held, core_key_conflict, permanent_failure, retries_exhausted, expired).",
        _CONSUMER_DEAD_LETTER,
    ),
    h.ERROR_TYPE: _header(_TEXT, "The error's type.", _CONSUMER_DEAD_LETTER),
    h.ERROR_MESSAGE: _header(
        _TEXT,
        "The error, account numbers masked, at most 2,000 characters, never SQL parameters.",
        _CONSUMER_DEAD_LETTER,
    ),
    h.ATTEMPTS: _header(_INT, "Delivery attempts so far (the first is 1).", _CONSUMER_DEAD_LETTER),
    h.FAILED_AT: _header(
        {"type": "string", "format": "date-time"}, "When the last attempt failed.", _CONSUMER_DEAD_LETTER
    ),
    h.CLAIMS: _header(
        {"type": "object"},
        "The `remit-*` headers an untrusted publisher (a tenant's own login, anyone not trusted) sent: kept as "
        "evidence in the dead-letter store, never believed.",
        _CONSUMER_DEAD_LETTER,
    ),
    h.BODY_TRUNCATED: _header(
        _BOOL, "The body is only the first bytes of an oversize one (never replayable).", _CONSUMER_DEAD_LETTER
    ),
    h.BODY_LENGTH: _header(_INT, "The oversize body's full length in bytes.", _CONSUMER_DEAD_LETTER),
    h.BODY_SHA256: _header(_TEXT, "The oversize body's SHA-256, hex.", _CONSUMER_DEAD_LETTER),
    h.PROPERTIES_UNREADABLE: _header(
        _TEXT,
        "Why the delivery's AMQP properties or headers could not be read (nested too deep, too many values, text "
        "that is not UTF-8, a timestamp past 9999...): the dead letter carries what could be read.",
        _CONSUMER_DEAD_LETTER,
    ),
    h.PROPERTIES_LENGTH: _header(_INT, "The unreadable content header's length in bytes.", _CONSUMER_DEAD_LETTER),
    h.PROPERTIES_SHA256: _header(_TEXT, "The unreadable content header's SHA-256, hex.", _CONSUMER_DEAD_LETTER),
}

# Which headers each kind of message carries; a consumer of the work queues sees fresh payments and
# retries alike (a retry comes back through `payments`).
PAYMENT_HEADERS = (h.TENANT, h.PUBLISHED_AT, h.REPLAY_OF)
RETRY_HEADERS = (h.TENANT, h.ORIGINAL_QUEUE, h.PUBLISHED_BY, h.IDENTITY_TENANT)
DELIVERED_HEADERS = (*PAYMENT_HEADERS, *RETRY_HEADERS[1:])
DEAD_LETTER_HEADERS = tuple(HEADERS)


def headers_schema(names: tuple[str, ...], required: tuple[str, ...]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": list(required),
        "properties": {name: HEADERS[name] for name in names},
    }

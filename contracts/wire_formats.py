"""The contract's two text formats, checked and parsed inside pydantic-core: the canonical UUID and the
RFC 3339 UTC timestamp.

From JSON (the consumer's path) no Python code runs for them but the final move of a timestamp to
`datetime.UTC`: as `mode="before"` field validators they cost the consumer about 7 µs a message, a third of
the whole strict parse. A Python value (the publisher's) takes the same schema: a string goes through the
same text checks, an instance through the type's own strict check.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, SchemaValidator
from pydantic_core import core_schema as cs

# The canonical 8-4-4-4-12 form (JSON Schema "uuid"); pydantic alone also takes 32 bare hex digits,
# braces and "urn:uuid:" prefixes, i.e. several spellings of the same idempotency key.
UUID_PATTERN = r"^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$"
# RFC 3339 date-time (the ISO 8601 profile JSON Schema's "date-time" means); the offset is optional here
# only so that a naive time gets its own error. Checked before parsing: pydantic's parser also takes Unix
# timestamps ("1714521600"), a ' ' or '_' separator and minutes-only times, none of which is the
# documented format. Digits beyond microseconds are truncated.
TIMESTAMP_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})?$"
)


def _refused(schema: CoreSchema, error_type: str, message: str) -> CoreSchema:
    return cs.custom_error_schema(schema, custom_error_type=error_type, custom_error_message=message)


def _text(type_error: str, pattern: str, error_type: str, message: str) -> CoreSchema:
    """A JSON string of this pattern; anything but a string is refused as the type's own error says."""
    return cs.chain_schema(
        [
            cs.custom_error_schema(cs.str_schema(strict=True), custom_error_type=type_error),
            _refused(cs.str_schema(pattern=pattern, strict=True), error_type, message),
        ]
    )


def _text_or_instance(text: CoreSchema, instance: CoreSchema) -> CoreSchema:
    """JSON carries text only; from Python a string takes the text path and anything else the instance's."""
    from_text = SchemaValidator(text)

    def route(value: Any, instance_check: cs.ValidatorFunctionWrapHandler) -> Any:
        return from_text.validate_python(value) if isinstance(value, str) else instance_check(value)

    return cs.json_or_python_schema(json_schema=text, python_schema=cs.no_info_wrap_validator_function(route, instance))


@dataclass(frozen=True, slots=True)
class _Format:
    """An `Annotated` marker: the core schema it validates with and the JSON Schema it documents."""

    build: Callable[[], CoreSchema]
    documented_as: Callable[[], CoreSchema]

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return self.build()

    def __get_pydantic_json_schema__(self, schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return handler(self.documented_as())


def _canonical_uuid() -> CoreSchema:
    text = cs.chain_schema(
        [
            _text("uuid_type", UUID_PATTERN, "uuid_form", "message_id must be a UUID in canonical 8-4-4-4-12 hex form"),
            cs.uuid_schema(strict=False),  # lax: reads the checked string
        ]
    )
    return _text_or_instance(text, cs.uuid_schema(strict=True))


def _utc_timestamp() -> CoreSchema:
    aware_utc = cs.chain_schema(
        [
            cs.datetime_schema(strict=True, tz_constraint="aware"),
            _refused(
                cs.datetime_schema(strict=True, tz_constraint=0),
                "timestamp_zone",
                "timestamp_utc must be in UTC (suffix Z or +00:00)",
            ),
        ]
    )
    text = cs.chain_schema(
        [
            _text(
                "datetime_type",
                TIMESTAMP_PATTERN,
                "timestamp_form",
                "timestamp_utc must be an ISO 8601 date-time such as 2025-05-01T02:14:33.421Z",
            ),
            _refused(
                cs.datetime_schema(strict=False),  # lax: reads the checked string
                "timestamp_value",
                "timestamp_utc is not a valid date-time (no such day, hour, minute or second)",
            ),
            aware_utc,
        ]
    )
    return cs.no_info_after_validator_function(_as_utc, _text_or_instance(text, aware_utc))


def _as_utc(moment: datetime) -> datetime:
    # Offset zero by now; one tzinfo for every spelling (pydantic-core's own is its TzInfo(0)). astimezone, not
    # replace(tzinfo=...): the same datetime at half the cost (CPython parses replace's keywords; 0.9 µs a
    # message in the consumer, docs/benchmarks.md).
    return moment.astimezone(UTC)


CanonicalUuid = _Format(_canonical_uuid, cs.uuid_schema)
UtcTimestamp = _Format(_utc_timestamp, cs.datetime_schema)

"""AMQP properties as a hostile publisher writes them: raw bytes on the wire, generated with hypothesis.

RabbitMQ passes a message's properties through unread (it checks user_id and expiration), so whatever bytes a
tenant writes reach remit's consumer, and its archiver when the message dead-letters. `RawProperties` sends
them as they are (aiormq encodes a content header as its class, flags and `properties.marshal()`), and
`hostile_properties` draws every kind remit must refuse: tables nested past its bound or to the frame's size,
arrays of tables, more values than it takes, long strings, every field type, text that is not UTF-8 in a
property or a key, timestamps no calendar holds, unknown field types. Each keeps a readable user_id (RabbitMQ
refuses any other) and a payment body that is valid: only the properties are at fault.
"""

import struct
from collections.abc import Sequence
from typing import Any, ClassVar

from aiormq.abc import AbstractChannel
from hypothesis import strategies as st
from pamqp import commands as spec

from app.messaging import headers
from app.messaging.lenient_properties import MAX_DEPTH, MAX_HEADER_BYTES, MAX_VALUES

FRAME_ROOM = 120_000  # under RabbitMQ's frame_max (131,072), which a content header must fit in
NOT_UTF8 = (b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"a\x80b")
PAST_9999 = 2**48  # pamqp reads a timestamp above 2**32 as milliseconds: this is past year 9999 even so


class RawProperties(spec.Basic.Properties):
    """Properties whose encoding is given bytes (flags and fields), written to the wire as they are."""

    __slots__: ClassVar[list[str]] = ["raw"]

    def __init__(self, raw: bytes) -> None:
        super().__init__(message_id="raw")  # aiormq sets one when absent; the bytes below are what is sent
        self.raw = raw

    def marshal(self) -> bytes:
        return self.raw


def shortstr(raw: bytes) -> bytes:
    return bytes([len(raw)]) + raw


def table(entries: Sequence[tuple[bytes, bytes]]) -> bytes:
    """A field table's bytes: its length, then each key and typed value."""
    content = b"".join(shortstr(key) + value for key, value in entries)
    return struct.pack(">I", len(content)) + content


def table_value(entries: Sequence[tuple[bytes, bytes]]) -> bytes:
    return b"F" + table(entries)


def array_value(values: Sequence[bytes]) -> bytes:
    content = b"".join(values)
    return b"A" + struct.pack(">I", len(content)) + content


def long_string(raw: bytes) -> bytes:
    return b"S" + struct.pack(">I", len(raw)) + raw


def nested(depth: int, arrays: bool = False, leaf: bytes = b"t\x01") -> bytes:
    """A value `depth` tables (or alternately arrays and tables) deep; built without recursion."""
    value = leaf
    for level in range(depth):
        value = array_value([value]) if arrays and level % 2 else table_value([(b"a", value)])
    return value


def properties(fields: dict[str, bytes]) -> bytes:
    """Flags, then each field's bytes in the protocol's order."""
    flags, parts = 0, []
    for name in spec.Basic.Properties.__slots__:
        if name in fields:
            flags |= spec.Basic.Properties.flags[name]
            parts.append(fields[name])
    return struct.pack(">H", flags) + b"".join(parts)


def payment_properties(
    user: str, tenant: str, message_id: str, *entries: tuple[bytes, bytes], **fields: bytes
) -> bytes:
    """A payment's own properties (content type, persistent, message id, user_id, tenant header), with hostile
    header entries and fields added or put in place of its own."""
    own = {
        "content_type": shortstr(b"application/json"),
        "headers": table([(headers.TENANT.encode(), long_string(tenant.encode())), *entries]),
        "delivery_mode": b"\x02",
        "message_id": shortstr(message_id.encode()),
        "user_id": shortstr(user.encode()),
    }
    return properties(own | fields)


def _every_type(draw: st.DrawFn) -> bytes:
    """A table holding every field type RabbitMQ knows, with drawn values, nested past remit's bound."""
    values = [
        b"t" + bytes([draw(st.integers(0, 1))]),
        b"b" + struct.pack(">b", draw(st.integers(-128, 127))),
        b"B" + struct.pack(">B", draw(st.integers(0, 255))),
        b"s" + struct.pack(">h", draw(st.integers(-(2**15), 2**15 - 1))),
        b"u" + struct.pack(">H", draw(st.integers(0, 2**16 - 1))),
        b"I" + struct.pack(">i", draw(st.integers(-(2**31), 2**31 - 1))),
        b"i" + struct.pack(">I", draw(st.integers(0, 2**32 - 1))),
        b"l" + struct.pack(">q", draw(st.integers(-(2**63), 2**63 - 1))),
        b"f" + struct.pack(">f", draw(st.floats(width=32, allow_nan=True))),
        b"d" + struct.pack(">d", draw(st.floats(allow_nan=True))),
        b"D" + struct.pack(">Bi", draw(st.integers(0, 255)), draw(st.integers(-(2**31), 2**31 - 1))),
        b"T" + struct.pack(">Q", draw(st.integers(0, 2**32))),
        b"V",
        b"x" + struct.pack(">I", 3) + b"\x00\x01\x02",
        long_string(draw(st.binary(max_size=40))),
    ]
    return nested(draw(st.integers(MAX_DEPTH, 40)), leaf=table_value([(b"k%d" % i, v) for i, v in enumerate(values)]))


@st.composite
def hostile_properties(
    draw: st.DrawFn, user: str, tenant: str, message_id: str, extra: dict[str, bytes] | None = None
) -> tuple[str, bytes]:
    """(kind, the properties' bytes) of one message remit cannot read; `extra` fields (an expiration, say) added."""
    kind = draw(st.sampled_from(KINDS))

    def with_extra(*entries: tuple[bytes, bytes], **fields: bytes) -> bytes:
        return payment_properties(user, tenant, message_id, *entries, **(extra or {}), **fields)

    if kind == "deep_table":
        depth = draw(st.one_of(st.integers(MAX_DEPTH, 2_000), st.just(800), st.just((FRAME_ROOM - 200) // 7)))
        return kind, with_extra((b"deep", nested(depth)))
    if kind == "arrays_of_tables":
        depth = draw(st.integers(MAX_DEPTH, (FRAME_ROOM - 200) // 8))
        return kind, with_extra((b"deep", nested(depth, arrays=True)))
    if kind == "many_values":
        count = draw(st.integers(MAX_VALUES, 14_000))
        return kind, with_extra(*((b"h%d" % i, b"V") for i in range(count)))
    if kind == "long_strings":
        sizes = draw(
            st.lists(st.integers(1, 40_000), min_size=1, max_size=3).filter(lambda s: sum(s) > MAX_HEADER_BYTES)
        )
        return kind, with_extra(*((b"s%d" % i, long_string(b"x" * n)) for i, n in enumerate(sizes)))
    if kind == "every_type":
        return kind, with_extra((b"types", _every_type(draw)))
    if kind == "not_utf8_property":
        name = draw(st.sampled_from(["correlation_id", "app_id", "reply_to", "message_type", "content_encoding"]))
        return kind, with_extra(**{name: shortstr(draw(st.sampled_from(NOT_UTF8)))})
    if kind == "not_utf8_key":
        key = draw(st.sampled_from(NOT_UTF8))
        where = draw(st.sampled_from(["top", "nested"]))
        entry = (key, b"t\x01") if where == "top" else (b"outer", table_value([(key, b"t\x01")]))
        return kind, with_extra(entry)
    if kind == "bad_timestamp_property":
        stamp = draw(st.integers(PAST_9999, 2**64 - 1))
        return kind, with_extra(timestamp=struct.pack(">Q", stamp))
    if kind == "bad_timestamp_value":
        stamp = draw(st.integers(PAST_9999, 2**64 - 1))
        return kind, with_extra((b"when", b"T" + struct.pack(">Q", stamp)))
    assert kind == "unknown_type"
    return kind, with_extra((b"odd", draw(st.sampled_from([b"Z", b"\x7f", b"Q"])) + b"\x00\x00\x00\x00"))


KINDS = (
    "deep_table",
    "arrays_of_tables",
    "many_values",
    "long_strings",
    "every_type",
    "not_utf8_property",
    "not_utf8_key",
    "bad_timestamp_property",
    "bad_timestamp_value",
    "unknown_type",
)


async def publish_raw(channel: AbstractChannel, routing_key: str, body: bytes, raw: bytes, **publish: Any) -> None:
    """Publish `body` with properties that are `raw` on the wire (aiormq's channel, confirms as it has them)."""
    await channel.basic_publish(
        body, exchange="payments", routing_key=routing_key, properties=RawProperties(raw), **publish
    )

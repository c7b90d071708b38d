"""The three frames of a delivery decoded straight from the receive buffer; pamqp decodes everything else.

pamqp decodes any frame generically: it walks each method's attribute list, looks every type up by name
and cuts a new copy of the remaining bytes after each field. For the frames a consumer receives all the
time (Basic.Deliver, the content header with its properties and headers table, the body) that was about
a seventh of the consumer's CPU (docs/benchmarks.md, "Consumer"). Here they are read with fixed offsets
into the buffer, into the same pamqp objects with the same values.

Only well-formed frames take this path. Anything it does not read exactly as pamqp would (another frame
type or method, a truncated or overlong field, a field type it does not know, more than one word of property
flags) returns None, and the caller hands the frame to pamqp, whose answer (a value or an error) then stands.
tests/unit/test_frame_decoding.py compares the two on generated and on corrupted frames.

One difference is deliberate: a short string or a table key that is not UTF-8 reads here with U+FFFD in place
of the bad bytes, where pamqp raises. The publisher chooses those bytes (RabbitMQ passes a property such as
correlation_id through unread), and an error there would close the consumer's connection, for every tenant's
deliveries on it, at every redelivery: a tenant could stall a shared pool with one message. remit reads none of
those it does not check itself, and a checked one (content_type, message_id) that was not UTF-8 fails its check.
The content header a frame reader cannot read at all is `bare_header` (its body size, no properties).
"""

import struct
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pamqp import commands as spec
from pamqp.body import ContentBody
from pamqp.header import ContentHeader

FRAME_HEADER = struct.Struct(">BHI")  # type, channel, payload size
FRAME_END = 0xCE
METHOD, CONTENT_HEADER, BODY = 1, 2, 3
DELIVER = spec.Basic.Deliver.index

_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_U64 = struct.Struct(">Q")
_HEADER_FIELDS = struct.Struct(">HHQH")  # class id, weight, body size, the first word of property flags
_PROPERTIES: tuple[tuple[int, str, str], ...] = tuple(  # in pamqp's order, which is the wire's
    (spec.Basic.Properties.flags[name], name, spec.Basic.Properties.amqp_type(name))
    for name in spec.Basic.Properties.__slots__
)
# pamqp's table value types with a fixed width, by type code, decoded as pamqp does (its names aside:
# 'I' is signed, 'i' unsigned, 'l' and 'L' are both signed 64-bit).
_FIXED: dict[int, struct.Struct] = {
    ord("b"): struct.Struct(">b"),
    ord("B"): struct.Struct(">B"),
    ord("s"): struct.Struct(">h"),
    ord("u"): struct.Struct(">H"),
    ord("I"): struct.Struct(">l"),
    ord("i"): struct.Struct(">L"),
    ord("l"): _I64,
    ord("L"): _I64,
    ord("f"): struct.Struct(">f"),
    ord("d"): struct.Struct(">d"),
}

Decoded = tuple[int, int, Any]


class _NotOurs(Exception):
    """The frame is not one this module reads exactly as pamqp does: pamqp decides."""


def decode_frame(buffer: bytes, at: int) -> Decoded | None:
    """The frame that starts at `at` (complete in `buffer`) as pamqp's unmarshal would return it, or None."""
    kind, channel, size = FRAME_HEADER.unpack_from(buffer, at)
    start = at + FRAME_HEADER.size
    end = start + size
    if size == 0 or end >= len(buffer) or buffer[end] != FRAME_END:
        return None
    try:
        if kind == METHOD:
            frame: Any = _deliver(buffer, start, end)
        elif kind == CONTENT_HEADER:
            frame = _content_header(buffer, start, end)
        elif kind == BODY:
            frame = ContentBody(buffer[start:end])
        else:
            return None
    except (_NotOurs, IndexError, struct.error, ValueError, OverflowError, OSError):
        return None
    return end + 1 - at, channel, frame


def bare_header(buffer: bytes, at: int) -> Decoded | None:
    """A complete content header frame at `at` with its properties left out (neither this module nor pamqp could
    read them): its body size, so that the body that follows is still one delivery; None when even that is
    missing."""
    kind, channel, size = FRAME_HEADER.unpack_from(buffer, at)
    start = at + FRAME_HEADER.size
    if kind != CONTENT_HEADER or size < _HEADER_FIELDS.size:
        return None
    class_id, weight, body_size, _ = _HEADER_FIELDS.unpack_from(buffer, start)
    header = ContentHeader(weight, body_size, spec.Basic.Properties())
    header.class_id = class_id
    return FRAME_HEADER.size + size + 1, channel, header


def _deliver(buffer: bytes, at: int, end: int) -> spec.Basic.Deliver:
    if end - at < 4 or _U32.unpack_from(buffer, at)[0] != DELIVER:
        raise _NotOurs
    consumer_tag, at = _short_str(buffer, at + 4, end)
    if at + 9 > end:
        raise _NotOurs
    delivery_tag, flags = _I64.unpack_from(buffer, at)[0], buffer[at + 8]
    exchange, at = _short_str(buffer, at + 9, end)
    routing_key, at = _short_str(buffer, at, end)
    deliver = spec.Basic.Deliver.__new__(spec.Basic.Deliver)  # every slot set below; pamqp validates nothing read
    deliver.consumer_tag, deliver.delivery_tag, deliver.redelivered = consumer_tag, delivery_tag, bool(flags & 1)
    deliver.exchange, deliver.routing_key = exchange, routing_key
    return deliver


def _content_header(buffer: bytes, at: int, end: int) -> ContentHeader:
    if end - at < _HEADER_FIELDS.size:
        raise _NotOurs
    class_id, weight, body_size, flags = _HEADER_FIELDS.unpack_from(buffer, at)
    if flags & 1:  # a second word of flags: no such property in 0-9-1
        raise _NotOurs
    at += _HEADER_FIELDS.size
    properties = spec.Basic.Properties()
    for flag, name, kind in _PROPERTIES:
        if flags & flag:
            value, at = _READERS[kind](buffer, at, end)
            setattr(properties, name, value)
    header = ContentHeader.__new__(ContentHeader)
    header.class_id, header.weight, header.body_size, header.properties = class_id, weight, body_size, properties
    return header


# Each reader takes the buffer, where its field starts and where the enclosing structure ends; it returns the
# value and where the next field starts, or raises _NotOurs when the field would pass that end.


def _short_str(buffer: bytes, at: int, end: int) -> tuple[str, int]:
    stop = at + 1 + buffer[at]  # at == end reads a byte past the structure, but then stop > end
    if stop > end:
        raise _NotOurs
    return buffer[at + 1 : stop].decode(errors="replace"), stop


def _octet(buffer: bytes, at: int, end: int) -> tuple[int, int]:
    if at >= end:
        raise _NotOurs
    return buffer[at], at + 1


def _timestamp(buffer: bytes, at: int, end: int) -> tuple[datetime, int]:
    if at + 8 > end:
        raise _NotOurs
    seconds: float = _U64.unpack_from(buffer, at)[0]
    if seconds > 0xFFFFFFFF:  # pamqp reads such a value as milliseconds
        seconds /= 1000.0
    return datetime.fromtimestamp(seconds, tz=UTC), at + 8


def _table(buffer: bytes, at: int, end: int) -> tuple[dict[str, Any], int]:
    stop = _sized(buffer, at, end)
    at += 4
    table: dict[str, Any] = {}
    while at < stop:
        key_end = at + 1 + buffer[at]
        if key_end >= stop:  # a key with no room for its value's type
            raise _NotOurs
        key = buffer[at + 1 : key_end].decode(errors="replace")
        table[key], at = _value(buffer, key_end, stop)
    return table, stop


def _array(buffer: bytes, at: int, end: int) -> tuple[list[Any], int]:
    stop = _sized(buffer, at, end)
    at += 4
    values = []
    while at < stop:
        value, at = _value(buffer, at, stop)
        values.append(value)
    return values, stop


def _sized(buffer: bytes, at: int, end: int) -> int:
    """Where a structure with a 32-bit length at `at` ends, when it ends before `end`."""
    if at + 4 > end:
        raise _NotOurs
    stop: int = at + 4 + _U32.unpack_from(buffer, at)[0]
    if stop > end:
        raise _NotOurs
    return stop


def _value(buffer: bytes, at: int, end: int) -> tuple[Any, int]:
    """A table's or an array's value: its type byte at `at` (before `end`), then the value."""
    kind = buffer[at]
    at += 1
    if kind == 0x53:  # 'S': text, or its bytes when they are not UTF-8 (as pamqp)
        stop = _sized(buffer, at, end)
        raw = buffer[at + 4 : stop]
        try:
            return raw.decode(), stop
        except UnicodeDecodeError:
            return raw, stop
    fixed = _FIXED.get(kind)
    if fixed is not None:
        if at + fixed.size > end:
            raise _NotOurs
        return fixed.unpack_from(buffer, at)[0], at + fixed.size
    if kind == 0x74:  # 't'
        flag, at = _octet(buffer, at, end)
        return flag != 0, at
    if kind in (0x56, 0x00):  # 'V' and a zero byte: no value
        return None, at
    reader = _NESTED.get(kind)
    if reader is None:  # decimals, byte arrays, unknown types: pamqp's
        raise _NotOurs
    return reader(buffer, at, end)


_Reader = Callable[[bytes, int, int], tuple[Any, int]]
_READERS: dict[str, _Reader] = {"shortstr": _short_str, "octet": _octet, "table": _table, "timestamp": _timestamp}
_NESTED: dict[int, _Reader] = {ord("T"): _timestamp, ord("F"): _table, ord("A"): _array}

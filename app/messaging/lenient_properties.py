"""A content header read property by property, keeping what reads: for the headers pamqp cannot decode or that
are beyond remit's bounds (app/messaging/amqp_guard.py).

AMQP writes every property and every table value with its length or a fixed width, so a field that does not
decode can be stepped over and the rest still read. Each value is decoded by pamqp itself; this module only
knows the widths.
"""

import hashlib
import struct
from dataclasses import dataclass
from typing import Any

from pamqp import commands as spec
from pamqp import decode
from pamqp.constants import FRAME_END, FRAME_HEADER_SIZE
from pamqp.header import ContentHeader

# In a decoded headers table only, never on the wire (the guard removes it from what pamqp decodes): why the
# properties could not all be read, and the raw header's length and SHA-256.
UNREADABLE = "remit-guard-unreadable"

MAX_DEPTH = 8  # tables and arrays inside the headers table; x-death is 3 deep
MAX_VALUES = 256  # values in the headers table, nested ones included
MAX_HEADER_BYTES = 16 * 1024  # a content header frame; the broker's frame_max (128 KiB) bounds it anyway
MAX_ENTRY_BYTES = 4 * 1024  # one entry of the headers table, when it is read entry by entry

_FRAME = struct.Struct(">BHI")
_HEADER = struct.Struct(">HHQ")  # class id, weight, body size
_U32 = struct.Struct(">I")
_FIXED_WIDTH = {
    b"t": 1, b"b": 1, b"B": 1, b"s": 2, b"u": 2, b"I": 4, b"i": 4, b"l": 8, b"L": 8,
    b"f": 4, b"d": 8, b"D": 5, b"T": 8, b"V": 0, b"\x00": 0,
}  # fmt: skip
_SIZED = frozenset({b"S", b"A", b"F", b"x"})  # a 32-bit length, then that many bytes
_PROPERTIES = tuple((name, spec.Basic.Properties.flags[name]) for name in spec.Basic.Properties.__slots__)
_OWN_PREFIXES = ("x-", "remit-")  # the broker's and remit's entries, kept before anyone else's


@dataclass(frozen=True, slots=True)
class Unreadable:
    why: str
    length: int  # of the raw content header (its payload, as the publisher wrote it)
    sha256: str

    @classmethod
    def taken_from(cls, headers: Any) -> "Unreadable | None":
        """What the guard recorded in a decoded headers table, if anything, taken out of it."""
        noted = headers.pop(UNREADABLE, None) if isinstance(headers, dict) else None
        if not isinstance(noted, dict):
            return None
        return cls(str(noted.get("why")), int(noted.get("length", 0)), str(noted.get("sha256")))

    def describe(self) -> str:
        return f"AMQP properties unreadable ({self.why}); content header {self.length} bytes, sha256 {self.sha256}"


def within_bounds(headers: dict[str, Any], frame_length: int) -> str | None:
    """None when a decoded headers table is within remit's bounds, else why not."""
    if frame_length > MAX_HEADER_BYTES:
        return f"properties over {MAX_HEADER_BYTES} bytes"
    return _beyond(headers, 1, MAX_VALUES)[1]


def _beyond(value: dict[str, Any] | list[Any], depth: int, budget: int) -> tuple[int, str | None]:
    """(values left of the budget, why the value is out of bounds or None); iterative, so depth costs no stack."""
    stack = [(value, depth)]
    while stack:
        node, level = stack.pop()
        if level > MAX_DEPTH:
            return budget, f"headers nested deeper than {MAX_DEPTH}"
        for child in node.values() if isinstance(node, dict) else node:
            budget -= 1
            if budget < 0:
                return budget, f"more than {MAX_VALUES} header values"
            if isinstance(child, dict | list):
                stack.append((child, level + 1))
    return budget, None


def lenient_header(data_in: bytes, why: str) -> tuple[int, int, ContentHeader] | None:
    """The frame's content header with what reads of it, marked UNREADABLE; None when the frame itself is not whole."""
    if len(data_in) < FRAME_HEADER_SIZE:
        return None
    _, channel, size = _FRAME.unpack_from(data_in)
    end = FRAME_HEADER_SIZE + size
    if len(data_in) <= end or data_in[end] != FRAME_END or size < _HEADER.size + 2:
        return None
    payload = data_in[FRAME_HEADER_SIZE:end]
    class_id, weight, body_size = _HEADER.unpack_from(payload)
    properties = _properties(payload, _HEADER.size)
    noted: Any = {"why": why, "length": len(payload), "sha256": hashlib.sha256(payload).hexdigest()}
    properties.headers = {**(properties.headers or {}), UNREADABLE: noted}
    header = ContentHeader(weight, body_size, properties)
    header.class_id = class_id
    return end + 1, channel, header


def _properties(payload: bytes, at: int) -> spec.Basic.Properties:
    flags, at = _flags(payload, at)
    properties = spec.Basic.Properties()
    for name, flag in _PROPERTIES:
        if not flags & flag:
            continue
        kind = spec.Basic.Properties.amqp_type(name)
        width = _property_width(kind, payload, at)
        if width is None or at + width > len(payload):
            break  # the lengths no longer add up: nothing after this can be placed
        raw = payload[at : at + width]
        at += width
        value = _table(raw) if kind == "table" else _decoded(kind, raw)
        if value is not None:
            setattr(properties, name, value)  # as pamqp's own unmarshal does: no validation of values
    return properties


def _flags(payload: bytes, at: int) -> tuple[int, int]:
    flags, word = 0, 0
    while at + 2 <= len(payload):
        (partial,) = struct.unpack_from(">H", payload, at)
        at += 2
        flags |= partial << (word * 16)
        word += 1
        if not partial & 1:
            break
    return flags, at


def _property_width(kind: str, payload: bytes, at: int) -> int | None:
    if kind == "shortstr":
        return 1 + payload[at] if at < len(payload) else None
    if kind == "octet":
        return 1
    if kind == "timestamp":
        return 8
    if kind == "table" and at + 4 <= len(payload):
        return 4 + int(_U32.unpack_from(payload, at)[0])
    return None


def _decoded(kind: str, raw: bytes) -> Any:
    try:
        return decode.by_type(raw, kind)[1]
    except Exception:  # the publisher's bytes: the property is dropped, the rest still read
        return None


def _table(raw: bytes) -> dict[str, Any]:
    """The entries of a headers table that read and are within bounds, the broker's and remit's first."""
    entries = list(_entries(raw))
    entries.sort(key=lambda entry: not entry[0].startswith(_OWN_PREFIXES))
    kept: dict[str, Any] = {}
    budget, room = MAX_VALUES, MAX_HEADER_BYTES
    for key, value, width in entries:
        if width > MAX_ENTRY_BYTES or width > room:
            continue
        left, why = _beyond([value], 1, budget)
        if why is None:
            kept[key], budget, room = value, left, room - width
    return kept


def _entries(raw: bytes) -> Any:
    """(key, value, width) of each entry that decodes; stops where an entry's width cannot be known."""
    at = 4
    while at < len(raw):
        start = at
        key_width = raw[at]
        key_raw = raw[at + 1 : at + 1 + key_width]
        at += 1 + key_width
        width = _value_width(raw, at)
        if width is None:
            return
        value_raw, at = raw[at : at + width], at + width
        try:
            key = key_raw.decode("utf-8")
            _, value = decode.embedded_value(value_raw)
        except Exception:  # noqa: S112 - RecursionError included: this entry is dropped, the next read (the guard logs)
            continue
        yield key, value, at - start


def _value_width(raw: bytes, at: int) -> int | None:
    kind = raw[at : at + 1]
    if kind in _FIXED_WIDTH:
        width = 1 + _FIXED_WIDTH[kind]
    elif kind in _SIZED and at + 5 <= len(raw):
        width = 5 + int(_U32.unpack_from(raw, at + 1)[0])
    else:
        return None
    return width if at + width <= len(raw) else None

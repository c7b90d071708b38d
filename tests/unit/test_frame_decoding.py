"""A delivery's frames decoded by remit read as pamqp reads them, field for field and type for type; every
frame the fast path does not read exactly is left to pamqp.

The frames are built byte by byte here (not with pamqp's encoder, which writes only some of the table's
value types), so every type code and every property is covered, and then corrupted at random.
"""

import math
import struct
from typing import Any

import pamqp.commands as spec
import pamqp.frame
import pamqp.header
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pamqp.heartbeat import Heartbeat

from app.messaging.frame_decoding import decode_frame

END = b"\xce"


def _frame(kind: int, channel: int, payload: bytes) -> bytes:
    return struct.pack(">BHI", kind, channel, len(payload)) + payload + END


def _short(raw: bytes) -> bytes:
    return bytes([len(raw)]) + raw


def _long(raw: bytes) -> bytes:
    return struct.pack(">I", len(raw)) + raw


short_text = st.text(max_size=30).map(str.encode).filter(lambda b: len(b) < 256)
keys = st.text(min_size=1, max_size=12).map(str.encode).filter(lambda b: len(b) < 256)
text_bytes = st.one_of(st.text(max_size=40).map(str.encode), st.binary(max_size=40))  # not always UTF-8


def _fixed(code: str, fmt: str, values: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    return values.map(lambda v: code.encode() + struct.pack(fmt, v))


def _ints(bits: int, signed: bool) -> st.SearchStrategy[int]:
    return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else st.integers(0, 2**bits - 1)


timestamps = st.one_of(st.integers(0, 2**32 - 1), st.integers(2**32, 4 * 10**12), st.integers(0, 2**64 - 1))
fast_scalars = st.one_of(
    _fixed("b", ">b", _ints(8, True)),
    _fixed("B", ">B", _ints(8, False)),
    _fixed("s", ">h", _ints(16, True)),
    _fixed("u", ">H", _ints(16, False)),
    _fixed("I", ">l", _ints(32, True)),
    _fixed("i", ">L", _ints(32, False)),
    _fixed("l", ">q", _ints(64, True)),
    _fixed("L", ">q", _ints(64, True)),
    _fixed("f", ">f", st.floats(width=32)),
    _fixed("d", ">d", st.floats()),
    _fixed("t", ">B", st.integers(0, 255)),
    _fixed("T", ">Q", st.integers(0, 2**32 - 1)),
    st.text(max_size=40).map(lambda s: b"S" + _long(s.encode())),
    st.sampled_from([b"V", b"\x00"]),
)
# pamqp's own readers for these: a decimal, a byte array, a string that is not UTF-8, any timestamp
other_scalars = st.one_of(
    st.binary(max_size=5, min_size=5).map(lambda b: b"D" + b),
    st.binary(max_size=20).map(lambda b: b"x" + _long(b)),
    text_bytes.map(lambda b: b"S" + _long(b)),
    _fixed("T", ">Q", timestamps),
)


def _containers(scalars: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    def nest(inner: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
        arrays = st.lists(inner, max_size=4).map(lambda vs: b"A" + _long(b"".join(vs)))
        tables = st.lists(st.tuples(keys, inner), max_size=4).map(
            lambda kvs: b"F" + _long(b"".join(_short(k) + v for k, v in kvs))
        )
        return st.one_of(arrays, tables)

    return st.recursive(scalars, nest, max_leaves=8)


def _tables(values: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    return st.lists(st.tuples(keys, values), max_size=6).map(lambda kvs: _long(b"".join(_short(k) + v for k, v in kvs)))


@st.composite
def properties(draw: st.DrawFn, tables: st.SearchStrategy[bytes]) -> tuple[int, bytes]:
    """Property flags and the encoded properties: any subset of the fourteen, in the wire's order."""
    flags, parts = 0, []
    for name in spec.Basic.Properties.__slots__:
        if not draw(st.booleans()):
            continue
        flags |= spec.Basic.Properties.flags[name]
        kind = spec.Basic.Properties.amqp_type(name)
        if kind == "shortstr":
            parts.append(_short(draw(short_text)))
        elif kind == "octet":
            parts.append(bytes([draw(st.integers(0, 255))]))
        elif kind == "timestamp":
            parts.append(struct.pack(">Q", draw(st.integers(0, 4 * 10**12))))
        else:
            parts.append(draw(tables))
    return flags, b"".join(parts)


@st.composite
def content_headers(draw: st.DrawFn, values: st.SearchStrategy[bytes]) -> bytes:
    flags, encoded = draw(properties(_tables(values)))
    fields = struct.pack(
        ">HHQH", draw(st.sampled_from([60, 0, 40])), draw(_ints(16, False)), draw(_ints(64, False)), flags
    )
    return _frame(2, draw(st.integers(0, 65535)), fields + encoded)


@st.composite
def delivers(draw: st.DrawFn) -> bytes:
    payload = (
        struct.pack(">I", spec.Basic.Deliver.index)
        + _short(draw(short_text))
        + struct.pack(">q", draw(_ints(64, True)))
        + bytes([draw(st.integers(0, 255))])  # redelivered is bit 0; pamqp ignores the other bits
        + _short(draw(short_text))
        + _short(draw(short_text))
    )
    return _frame(1, draw(st.integers(0, 65535)), payload)


bodies = st.tuples(st.integers(0, 65535), st.binary(min_size=1, max_size=300)).map(lambda c: _frame(3, *c))
fast_frames = st.one_of(delivers(), content_headers(_containers(fast_scalars)), bodies)
any_frames = st.one_of(fast_frames, content_headers(_containers(st.one_of(fast_scalars, other_scalars))))


def _same(ours: Any, theirs: Any) -> bool:
    """Equal values of the same types, all the way down (NaN is NaN)."""
    if type(ours) is not type(theirs):
        return False
    if isinstance(ours, dict):
        return ours.keys() == theirs.keys() and all(_same(ours[k], theirs[k]) for k in ours)
    if isinstance(ours, list):
        return len(ours) == len(theirs) and all(_same(a, b) for a, b in zip(ours, theirs, strict=True))
    if isinstance(ours, float) and math.isnan(ours):
        return math.isnan(theirs)
    return bool(ours == theirs)


def _fields(frame: object) -> dict[str, Any]:
    if isinstance(frame, pamqp.header.ContentHeader):
        properties = {name: getattr(frame.properties, name) for name in spec.Basic.Properties.__slots__}
        return {**vars(frame), "properties": properties, "type": type(frame.properties)}
    if isinstance(frame, spec.Basic.Deliver):
        return {name: getattr(frame, name) for name in frame.__slots__}
    return {**vars(frame)}


def _pamqp(data: bytes) -> Any:
    try:
        return pamqp.frame.unmarshal(data)
    except Exception as exc:  # whatever pamqp raises stands: ours must have left the frame to it
        return exc


def _not_utf8(error: BaseException | None) -> bool:
    while error is not None:
        if isinstance(error, UnicodeDecodeError):
            return True
        error = error.__cause__ or error.__context__
    return False


def _check(data: bytes, prefix: bytes = b"") -> bool:
    """Ours (on `data` placed after `prefix` in a buffer) equals pamqp's when ours decodes; whether it did."""
    ours = decode_frame(prefix + data + b"\x01\x00", len(prefix))  # more bytes follow, as in a real buffer
    if ours is None:
        return False
    theirs = _pamqp(data)
    if isinstance(theirs, Exception):  # the one difference: text a publisher chose that is not UTF-8
        assert _not_utf8(theirs), f"pamqp refuses a frame remit read: {theirs!r}"
        return True
    assert ours[:2] == theirs[:2]
    assert type(ours[2]) is type(theirs[2])
    assert _same(_fields(ours[2]), _fields(theirs[2]))
    return True


@settings(max_examples=400, deadline=None)
@given(frame=fast_frames, prefix=st.binary(max_size=20))
def test_a_delivery_frame_reads_as_pamqp_reads_it(frame: bytes, prefix: bytes) -> None:
    assert _check(frame, prefix), "a well-formed delivery frame of known types must take the fast path"


@settings(max_examples=300, deadline=None)
@given(frame=any_frames)
def test_frames_with_pamqps_own_types_read_the_same_or_are_left_to_it(frame: bytes) -> None:
    _check(frame)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), frame=any_frames)
def test_a_corrupted_frame_reads_as_pamqp_reads_it_or_is_left_to_it(data: st.DataObject, frame: bytes) -> None:
    corrupted = bytearray(frame)
    for _ in range(data.draw(st.integers(1, 4))):
        corrupted[data.draw(st.integers(7, len(frame) - 1))] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):  # the payload cut short, the frame's size with it
        cut = data.draw(st.integers(1, len(frame) - 8))
        corrupted = bytearray(struct.pack(">BHI", frame[0], 0, cut)) + corrupted[7 : 7 + cut] + END
    assume(bytes(corrupted) != frame)
    _check(bytes(corrupted))


def test_a_header_value_that_is_not_utf8_is_bytes_as_pamqp_reads_it() -> None:
    table = _long(_short(b"k") + b"S" + _long(b"\xff\xfe"))
    frame = _frame(2, 1, struct.pack(">HHQH", 60, 0, 5, spec.Basic.Properties.flags["headers"]) + table)

    assert _check(frame)
    assert decode_frame(frame + b"\x00", 0)[2].properties.headers == {"k": b"\xff\xfe"}  # type: ignore[index]


def test_a_large_timestamp_is_milliseconds_as_pamqp_reads_it() -> None:
    frame = _frame(2, 1, struct.pack(">HHQHQ", 60, 0, 5, spec.Basic.Properties.flags["timestamp"], 1_795_928_206_123))

    assert _check(frame)
    assert decode_frame(frame, 0)[2].properties.timestamp.timestamp() == 1_795_928_206.123  # type: ignore[index]


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(pamqp.frame.marshal(Heartbeat(), 0), id="heartbeat"),
        pytest.param(pamqp.frame.marshal(spec.Basic.Ack(delivery_tag=7, multiple=True), 1), id="another-method"),
        pytest.param(_frame(2, 1, struct.pack(">HHQHH", 60, 0, 5, 0x8001, 0x0000)), id="two-words-of-flags"),
        pytest.param(_frame(3, 1, b"abc")[:-1] + b"\x00", id="bad-end-byte"),
        pytest.param(_frame(8, 1, b"abc"), id="unknown-frame-type"),
    ],
)
def test_frames_it_does_not_read_are_left_to_pamqp(frame: bytes) -> None:
    assert decode_frame(frame, 0) is None


def test_text_a_publisher_made_that_is_not_utf8_reads_with_a_replacement_where_pamqp_fails() -> None:
    """pamqp raises, and the consumer's connection would close on it at every redelivery (test_hostile_properties)."""
    flags = spec.Basic.Properties.flags["content_type"] | spec.Basic.Properties.flags["headers"]
    table = _long(_short(b"k\xff") + b"S" + _long(b"v"))
    frame = _frame(2, 1, struct.pack(">HHQH", 60, 0, 5, flags) + _short(b"json\xfe") + table)
    deliver = struct.pack(">I", spec.Basic.Deliver.index) + _short(b"tag") + struct.pack(">qB", 1, 0)
    deliver += _short(b"payments") + _short(b"tenant.acme.\xff")

    header, method = decode_frame(frame + b"\x01", 0), decode_frame(_frame(1, 1, deliver) + b"\x01", 0)

    assert isinstance(_pamqp(frame), Exception)
    assert isinstance(_pamqp(_frame(1, 1, deliver)), Exception)
    assert header is not None
    assert method is not None
    assert header[2].properties.content_type == "json\ufffd"
    assert header[2].properties.headers == {"k\ufffd": "v"}
    assert method[2].routing_key == "tenant.acme.\ufffd"


def _headers_frame(table: bytes, after: bytes = b"") -> bytes:
    flags = spec.Basic.Properties.flags["headers"] | (spec.Basic.Properties.flags["message_id"] if after else 0)
    return _frame(2, 1, struct.pack(">HHQH", 60, 0, 5, flags) + table + after)


def test_a_void_value_of_either_spelling_is_none() -> None:
    frame = _headers_frame(_long(_short(b"a") + b"V" + _short(b"b") + b"\x00"))

    assert _check(frame)
    assert decode_frame(frame, 0)[2].properties.headers == {"a": None, "b": None}  # type: ignore[index]


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(_headers_frame(struct.pack(">I", 7) + _short(b"k") + b"t\x01"), id="table-one-byte-long"),
        pytest.param(_headers_frame(_long(_short(b"k") + b"I\x00\x00\x01"), _short(b"id")), id="int-one-byte-short"),
        pytest.param(_headers_frame(_long(_short(b"k") + b"S" + struct.pack(">I", 3) + b"ab"), b"\x02id"), id="text"),
        pytest.param(_headers_frame(_long(_short(b"k") + b"A" + struct.pack(">I", 3) + b"V")), id="array"),
        pytest.param(_headers_frame(_long(_short(b"k"))), id="key-without-value"),
        pytest.param(_headers_frame(_long(_short(b"k") + b"t")), id="bool-without-byte"),
        pytest.param(
            _frame(2, 1, struct.pack(">HHQH", 60, 0, 5, spec.Basic.Properties.flags["timestamp"]) + b"\x00" * 7),
            id="timestamp-one-byte-short",
        ),
        pytest.param(_frame(2, 1, struct.pack(">HHQ", 60, 0, 5)), id="header-without-flags"),
    ],
)
def test_a_value_past_the_end_of_its_structure_is_left_to_pamqp(frame: bytes) -> None:
    # pamqp reads some of these on into the next property (and so differently); remit never does
    assert decode_frame(frame + b"\x01\x00", 0) is None

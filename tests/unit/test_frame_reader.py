"""remit's frame receiver yields what aiormq's own yields, frame for frame, however the bytes arrive."""

import asyncio
import itertools
import struct
from collections.abc import Sequence

import pamqp.body
import pamqp.commands as spec
import pamqp.frame
import pamqp.header
import pytest
from aiormq.connection import FrameReceiver
from aiormq.exceptions import AMQPConnectionError, InvalidFrameError, ProtocolSyntaxError
from hypothesis import given, settings
from hypothesis import strategies as st
from pamqp.heartbeat import Heartbeat

from app.messaging.frame_reader import BufferedFrameReceiver

text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
header_values = st.one_of(text, st.integers(-(2**31), 2**31 - 1), st.booleans(), st.none())
properties = st.builds(
    spec.Basic.Properties,
    content_type=st.sampled_from(["application/json", None]),
    delivery_mode=st.sampled_from([1, 2, None]),
    message_id=st.one_of(st.none(), st.uuids().map(str)),
    user_id=st.one_of(st.none(), st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)),
    headers=st.one_of(st.none(), st.dictionaries(st.from_regex(r"[a-z-]{1,20}", fullmatch=True), header_values)),
    expiration=st.one_of(st.none(), st.integers(0, 10**9).map(str)),
)


@st.composite
def deliveries(draw: st.DrawFn, channel: int | None = None, consumer_tag: str | None = None) -> bytes:
    """A delivery's frames, on a channel and for a consumer tag of its own unless given."""
    channel = draw(st.integers(1, 2047)) if channel is None else channel
    body = draw(st.binary(max_size=3000))
    chunks = [body[i : i + 1000] for i in range(0, len(body), 1000)]  # bodies split over frames, as brokers do
    deliver = spec.Basic.Deliver(
        consumer_tag=consumer_tag or draw(st.from_regex(r"remit:[a-z.]{1,30}:[0-9a-f]{8}", fullmatch=True)),
        delivery_tag=draw(st.integers(1, 2**63 - 1)),
        redelivered=draw(st.booleans()),
        exchange=draw(st.sampled_from(["", "payments"])),
        routing_key=draw(st.from_regex(r"[a-z0-9_.-]{1,60}", fullmatch=True)),
    )
    frames = [
        pamqp.frame.marshal(deliver, channel),
        pamqp.frame.marshal(pamqp.header.ContentHeader(0, len(body), draw(properties)), channel),
    ]
    return b"".join(frames + [pamqp.frame.marshal(pamqp.body.ContentBody(c), channel) for c in chunks])


_ACK = pamqp.frame.marshal(spec.Basic.Ack(delivery_tag=7, multiple=True), 1)
others = st.sampled_from(
    [
        pamqp.frame.marshal(Heartbeat(), 0),
        _ACK,
        pamqp.frame.marshal(spec.Channel.Close(406, "PRECONDITION_FAILED", class_id=60, method_id=80), 3),
        pamqp.frame.marshal(spec.Connection.Blocked(reason="low on memory"), 0),
    ]
)
streams = st.lists(st.one_of(deliveries(), others), min_size=1, max_size=12).map(b"".join)


async def _read_all(receiver_type: type[FrameReceiver], data: bytes, cuts: Sequence[int], eof: bool) -> list[object]:
    """Feed `data` in pieces cut at `cuts`, then (if `eof`) end the stream; what the receiver yields, and how
    it stopped (the exception's type), in order."""
    reader = asyncio.StreamReader()
    receiver = receiver_type(reader)
    bounds = [0, *sorted(set(cuts)), len(data)]

    async def feed() -> None:
        for start, end in itertools.pairwise(bounds):
            reader.feed_data(data[start:end])
            await asyncio.sleep(0)
        if eof:
            reader.feed_eof()

    feeding = asyncio.create_task(feed())
    seen: list[object] = []
    try:
        while True:
            weight, channel, frame = await asyncio.wait_for(receiver.get_frame(), 0.3)
            seen.append((weight, channel, type(frame).__name__, pamqp.frame.marshal(frame, channel)))
    except (StopAsyncIteration, AMQPConnectionError, InvalidFrameError, ProtocolSyntaxError, TimeoutError) as end:
        seen.append(type(end).__name__)
    await feeding
    return seen


def _both(data: bytes, cuts: Sequence[int], eof: bool = True) -> tuple[list[object], list[object]]:
    return (
        asyncio.run(_read_all(FrameReceiver, data, cuts, eof)),
        asyncio.run(_read_all(BufferedFrameReceiver, data, cuts, eof)),
    )


@settings(max_examples=60, deadline=None)
@given(data=st.data(), stream=streams)
def test_the_same_frames_however_the_stream_is_cut(data: st.DataObject, stream: bytes) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=20))

    stock, ours = _both(stream, cuts)

    assert ours == stock
    assert ours[-1] == "StopAsyncIteration"


@settings(max_examples=30, deadline=None)
@given(data=st.data(), stream=streams)
def test_a_stream_that_ends_mid_frame_is_a_connection_error(data: st.DataObject, stream: bytes) -> None:
    end = data.draw(st.integers(1, len(stream) - 1))
    if end in _frame_ends(stream):
        end -= 1  # between two frames is a clean end, tested above (a frame is at least 8 bytes)
    stock, ours = _both(stream[:end], [])

    assert ours == stock
    assert ours[-1] == "AMQPConnectionError"


def _frame_ends(stream: bytes) -> set[int]:
    """Where each frame of `stream` ends: a 7-byte header whose last 4 bytes are the payload size, the
    payload, one end byte."""
    ends, at = set(), 0
    while at < len(stream):
        at += 7 + int.from_bytes(stream[at + 3 : at + 7], "big") + 1
        ends.add(at)
    return ends


def test_waiting_for_more_is_not_an_end() -> None:
    frame = pamqp.frame.marshal(Heartbeat(), 0)

    stock, ours = _both(frame + frame[:5], [], eof=False)

    assert ours == stock
    assert ours[-1] == "TimeoutError"


@pytest.mark.parametrize(
    ("stream", "error"),
    [
        pytest.param(b"AMQP\x00\x00\x09\x01", "ProtocolSyntaxError", id="protocol-header-in-reply"),
        pytest.param(_ACK[:-1] + b"\x00", "InvalidFrameError", id="bad-end-byte"),
    ],
)
def test_a_malformed_stream_fails_as_aiormq_says(stream: bytes, error: str) -> None:
    stock, ours = _both(stream, [])

    assert ours == stock
    assert ours[-1] == error


def test_a_content_header_nobody_can_read_comes_without_its_properties_instead_of_closing_the_connection() -> None:
    """A publisher's timestamp past year 9999: pamqp fails on it, and aiormq's receiver with it, which would close
    the consumer's connection at every redelivery. Ours hands the delivery on without properties."""
    flags = spec.Basic.Properties.flags["timestamp"]
    payload = struct.pack(">HHQHQ", 60, 0, 2, flags, 2**64 - 1)
    header = struct.pack(">BHI", 2, 1, len(payload)) + payload + b"\xce"
    body = pamqp.frame.marshal(pamqp.body.ContentBody(b"{}"), 1)

    stock, ours = _both(header + body, [])

    assert stock == ["InvalidFrameError"]
    assert [item[2] for item in ours if isinstance(item, tuple)] == ["ContentHeader", "ContentBody"]
    bare = pamqp.frame.unmarshal(ours[0][3])[2]  # type: ignore[index]
    assert isinstance(bare, pamqp.header.ContentHeader)
    assert (bare.body_size, bare.properties.timestamp, bare.properties.user_id) == (2, None, None)

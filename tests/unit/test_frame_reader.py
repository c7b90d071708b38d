"""remit's frame receiver yields what aiormq's own yields, frame for frame, however the bytes arrive."""

import asyncio
import struct
from collections.abc import Sequence

import pamqp.body
import pamqp.commands as spec
import pamqp.frame
import pamqp.header
import pytest
from aiormq.connection import FrameReceiver
from hypothesis import given, settings
from hypothesis import strategies as st
from pamqp.heartbeat import Heartbeat

from app.messaging.frame_reader import BufferedFrameReceiver
from tests.utils.amqp_frames import ACK, deliveries, others, read_all

streams = st.lists(st.one_of(deliveries(), others), min_size=1, max_size=12).map(b"".join)


def _both(data: bytes, cuts: Sequence[int], eof: bool = True) -> tuple[list[object], list[object]]:
    return (
        asyncio.run(read_all(FrameReceiver, data, cuts, eof)),
        asyncio.run(read_all(BufferedFrameReceiver, data, cuts, eof)),
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
        pytest.param(ACK[:-1] + b"\x00", "InvalidFrameError", id="bad-end-byte"),
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

"""AMQP frame streams for the frame receiver's tests: deliveries and other frames as a broker sends them, and a
receiver fed any stream in pieces (tests/unit/test_frame_reader.py, tests/unit/test_direct_delivery.py)."""

import asyncio
import itertools
from collections.abc import Sequence

import pamqp.body
import pamqp.commands as spec
import pamqp.frame
import pamqp.header
from aiormq.connection import FrameReceiver
from aiormq.exceptions import AMQPConnectionError, InvalidFrameError, ProtocolSyntaxError
from hypothesis import strategies as st
from pamqp.heartbeat import Heartbeat

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


ACK = pamqp.frame.marshal(spec.Basic.Ack(delivery_tag=7, multiple=True), 1)
others = st.sampled_from(
    [
        pamqp.frame.marshal(Heartbeat(), 0),
        ACK,
        pamqp.frame.marshal(spec.Channel.Close(406, "PRECONDITION_FAILED", class_id=60, method_id=80), 3),
        pamqp.frame.marshal(spec.Connection.Blocked(reason="low on memory"), 0),
    ]
)


async def read_all(receiver_type: type[FrameReceiver], data: bytes, cuts: Sequence[int], eof: bool) -> list[object]:
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

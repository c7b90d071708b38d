"""Deliveries handed to their consumer inside remit's frame receiver (app/messaging/frame_reader.py,
`deliver_direct`): a registered consumer gets exactly its deliveries on its channel, whole and in order, as
aiormq's receiver would have read them; every other frame comes out as before; and a receiver that handed
deliveries over tells aiormq the connection is alive before it waits."""

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pamqp.body
import pamqp.commands as spec
import pamqp.frame
import pamqp.header
import pytest
from aiormq.connection import FrameReceiver
from hypothesis import find, given, settings
from hypothesis import strategies as st
from pamqp.header import ContentHeader

from app.messaging.frame_reader import BufferedFrameReceiver, deliver_direct, forget
from tests.utils.amqp_frames import deliveries, others, read_all

CHANNEL, TAG = 5, "remit:payments.work.enterprise:0123abcd"
Seen = tuple[int, bytes, bytes, bytes]  # channel number, its Deliver frame, its header frame, the whole body


@dataclass
class FakeChannel:
    number: int


@dataclass
class Received:
    seen: list[Seen] = field(default_factory=list)

    def __call__(self, channel: Any, deliver: spec.Basic.Deliver, header: ContentHeader, body: bytes) -> None:
        number = channel.number
        self.seen.append((number, _marshal(deliver, number), _marshal(header, number), body))


def _marshal(frame: Any, channel: int) -> bytes:
    return pamqp.frame.marshal(frame, channel)


@contextlib.contextmanager
def registered() -> Iterator[Received]:
    """The consumer TAG on CHANNEL, registered for the block."""
    received = Received()
    deliver_direct(FakeChannel(CHANNEL), TAG, received)
    try:
        yield received
    finally:
        forget(TAG)


ours = deliveries(channel=CHANNEL, consumer_tag=TAG)
mixed = st.lists(st.one_of(ours, deliveries(), deliveries(channel=CHANNEL), others), min_size=1, max_size=12)


def _split(stock: list[object]) -> tuple[list[object], list[Seen]]:
    """aiormq's frames, cut into what a registered consumer gets (its deliveries on its channel) and the rest."""
    rest: list[object] = []
    taken: list[Seen] = []
    expecting: list[Any] | None = None  # [Deliver frame, header frame, body size, body so far]
    for item in stock:
        if not isinstance(item, tuple):
            rest.append(item)
            continue
        _, channel, name, raw = item
        if expecting is not None and channel == CHANNEL:
            if name == "ContentHeader":
                expecting[1] = raw
                expecting[2] = _frame(raw).body_size
            else:
                expecting[3] += raw[7:-1]
            if len(expecting[3]) >= expecting[2]:
                taken.append((CHANNEL, expecting[0], expecting[1], expecting[3]))
                expecting = None
        elif channel == CHANNEL and name == "Deliver" and _frame(raw).consumer_tag == TAG:
            expecting = [raw, b"", -1, b""]
        else:
            rest.append(item)
    return rest, taken


def _frame(raw: bytes) -> Any:
    return pamqp.frame.unmarshal(raw)[2]


def _first_frame(seen: list[object]) -> object:
    return next(item[2] for item in seen if isinstance(item, tuple))


def _not_heartbeats(seen: list[object]) -> list[object]:
    return [item for item in seen if not (isinstance(item, tuple) and item[2] == "Heartbeat")]


@settings(max_examples=80, deadline=None)
@given(data=st.data(), parts=mixed)
def test_the_consumer_gets_its_deliveries_whole_and_in_order_and_aiormq_the_rest(
    data: st.DataObject, parts: list[bytes]
) -> None:
    stream = b"".join(parts)
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=20))

    stock = asyncio.run(read_all(FrameReceiver, stream, cuts, True))
    with registered() as received:
        passed_on = asyncio.run(read_all(BufferedFrameReceiver, stream, cuts, True))

    expected_rest, expected_taken = _split(stock)
    assert received.seen == expected_taken
    assert _not_heartbeats(passed_on) == _not_heartbeats(expected_rest)
    assert passed_on[-1] == "StopAsyncIteration"


@settings(max_examples=30, deadline=None)
@given(parts=st.lists(ours, min_size=1, max_size=5))
def test_after_handing_deliveries_over_the_receiver_yields_a_heartbeat_before_it_waits(parts: list[bytes]) -> None:
    """aiormq closes a connection that sent it no frame for three heartbeats: a stream of nothing but the
    consumer's deliveries must still count as frames."""
    with registered() as received:
        passed_on = asyncio.run(read_all(BufferedFrameReceiver, b"".join(parts), [], False))

    assert [item[2] for item in passed_on[:-1] if isinstance(item, tuple)] == ["Heartbeat"]
    assert passed_on[-1] == "TimeoutError"  # then it waits for bytes
    assert len(received.seen) == len(parts)


def test_a_body_over_several_frames_arrives_whole_and_the_next_frame_goes_on() -> None:
    body = bytes(range(256)) * 10
    deliver = spec.Basic.Deliver(consumer_tag=TAG, delivery_tag=9, exchange="", routing_key="q")
    stream = b"".join(
        [
            _marshal(deliver, CHANNEL),
            _marshal(pamqp.header.ContentHeader(0, len(body), spec.Basic.Properties()), CHANNEL),
            *(_marshal(pamqp.body.ContentBody(body[i : i + 1000]), CHANNEL) for i in range(0, len(body), 1000)),
            _marshal(spec.Basic.Ack(delivery_tag=3), CHANNEL),
        ]
    )
    with registered() as received:
        passed_on = asyncio.run(read_all(BufferedFrameReceiver, stream, [100, 1500, 2100], True))

    assert [seen[3] for seen in received.seen] == [body]
    assert [item[2] for item in _not_heartbeats(passed_on) if isinstance(item, tuple)] == ["Ack"]


def test_once_forgotten_the_consumers_deliveries_go_to_aiormq() -> None:
    stream = find(ours, lambda _: True)
    with registered() as received:
        forget(TAG)
        passed_on = asyncio.run(read_all(BufferedFrameReceiver, stream, [], True))

    assert received.seen == []
    assert _first_frame(passed_on) == "Deliver"


def test_a_registered_tag_on_another_channel_is_not_the_consumers() -> None:
    stream = find(deliveries(channel=CHANNEL + 1, consumer_tag=TAG), lambda _: True)
    with registered() as received:
        passed_on = asyncio.run(read_all(BufferedFrameReceiver, stream, [], True))

    assert received.seen == []
    assert _first_frame(passed_on) == "Deliver"


def test_another_frame_inside_a_delivery_is_an_invalid_frame() -> None:
    deliver = spec.Basic.Deliver(consumer_tag=TAG, delivery_tag=1, exchange="", routing_key="q")
    header = pamqp.header.ContentHeader(0, 10, spec.Basic.Properties())
    stream = b"".join(
        [
            _marshal(deliver, CHANNEL),
            _marshal(header, CHANNEL),
            _marshal(spec.Basic.Ack(delivery_tag=1), CHANNEL),  # where the body belongs
        ]
    )

    with registered() as received:
        passed_on = asyncio.run(read_all(BufferedFrameReceiver, stream, [], True))

    assert passed_on[-1] == "InvalidFrameError"
    assert received.seen == []


def test_a_consumer_that_fails_is_logged_and_the_next_delivery_still_arrives(caplog: pytest.LogCaptureFixture) -> None:
    got: list[int] = []

    def receive(channel: Any, deliver: spec.Basic.Deliver, header: ContentHeader, body: bytes) -> None:
        if deliver.delivery_tag == 1:
            raise RuntimeError("a bug in the consumer")
        got.append(deliver.delivery_tag or 0)

    frames = []
    for tag in (1, 2):
        frames.append(_marshal(spec.Basic.Deliver(consumer_tag=TAG, delivery_tag=tag, routing_key="q"), CHANNEL))
        frames.append(_marshal(pamqp.header.ContentHeader(0, 2, spec.Basic.Properties()), CHANNEL))
        frames.append(_marshal(pamqp.body.ContentBody(b"{}"), CHANNEL))
    deliver_direct(FakeChannel(CHANNEL), TAG, receive)
    try:
        with caplog.at_level(logging.ERROR, logger="remit.amqp"):
            passed_on = asyncio.run(read_all(BufferedFrameReceiver, b"".join(frames), [], True))
    finally:
        forget(TAG)

    assert got == [2]
    assert "receiving delivery 1 failed" in caplog.text
    assert passed_on[-1] == "StopAsyncIteration"

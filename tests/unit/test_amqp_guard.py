"""The AMQP guard (app/messaging/amqp_guard.py) against pamqp's own behaviour.

- On every content header pamqp reads and that is within remit's bounds, the guard's answer is pamqp's, exactly.
- On every hostile header (tests/utils/hostile_properties.py) stock pamqp either raises (what closes aiormq's
  connection) or reads something beyond remit's bounds; the guard answers a content header marked unreadable, with
  the raw header's length and SHA-256 and the publisher's user_id, and raises nothing. Should pamqp one day read
  one of them within bounds, the first assertion says so (the guard may then go).
- Through aiormq's own frame receiver: a stream with a hostile header yields frames to the end, where stock pamqp
  makes the receiver raise.
"""

import asyncio
import hashlib
import struct
from collections.abc import Iterator
from typing import Any

import pamqp.frame
import pytest
from aiormq.connection import FrameReceiver
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pamqp import commands as spec
from pamqp.body import ContentBody
from pamqp.header import ContentHeader

from app.messaging import amqp_guard
from app.messaging.lenient_properties import MAX_DEPTH, UNREADABLE, Unreadable, within_bounds
from tests.utils.hostile_properties import hostile_properties, nested, payment_properties, shortstr

guarded: Any = amqp_guard.guarded  # its frames typed loosely: the tests look into them
STOCK = pamqp.frame.unmarshal if not getattr(pamqp.frame.unmarshal, "remit_guard", False) else None
USER, TENANT, MESSAGE_ID = "remit-tenant-a", "tenant-a", "0191f5d2-8d1c-7cc2-a3b5-3a6f6b8c1d2e"
text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=40)
header_values = st.recursive(
    st.one_of(text, st.integers(-(2**31), 2**31 - 1), st.booleans(), st.none()),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.from_regex(r"[a-z]{1,8}", fullmatch=True), children, max_size=3)
    ),
    max_leaves=12,
)
readable_properties = st.builds(
    spec.Basic.Properties,
    content_type=st.sampled_from(["application/json", None]),
    delivery_mode=st.sampled_from([1, 2, None]),
    message_id=st.one_of(st.none(), st.uuids().map(str)),
    correlation_id=st.one_of(st.none(), text),
    user_id=st.one_of(st.none(), st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)),
    headers=st.one_of(
        st.none(), st.dictionaries(st.from_regex(r"[a-z-]{1,20}", fullmatch=True), header_values, max_size=8)
    ),
    expiration=st.one_of(st.none(), st.integers(0, 10**9).map(str)),
)


@pytest.fixture(scope="module")
def stock() -> Iterator[Any]:
    """pamqp's own unmarshal, whether or not another test installed the guard in this process."""
    original: Any = pamqp.frame.unmarshal
    found = STOCK or original.__closure__[0].cell_contents  # guarded() closes over the one it wraps
    yield found
    pamqp.frame.unmarshal = original


def header_of(decoded: tuple[int, int, Any]) -> ContentHeader:
    header = decoded[2]
    assert isinstance(header, ContentHeader)
    return header


def frame_of(raw_properties: bytes, body_size: int = 100, channel: int = 1) -> bytes:
    payload = struct.pack(">HHQ", 60, 0, body_size) + raw_properties
    return struct.pack(">BHI", 2, channel, len(payload)) + payload + b"\xce"


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(properties=readable_properties, body_size=st.integers(0, 2**40), channel=st.integers(1, 2047))
def test_within_bounds_the_guard_answers_what_pamqp_answers(
    stock: Any, properties: spec.Basic.Properties, body_size: int, channel: int
) -> None:
    frame = pamqp.frame.marshal(ContentHeader(0, body_size, properties), channel)
    count, on, header = stock(frame)
    assert within_bounds(header.properties.headers or {}, len(frame)) is None

    guarded_count, guarded_on, guarded_header = guarded(stock)(frame)
    assert (guarded_count, guarded_on, guarded_header.body_size) == (count, on, header.body_size)
    assert guarded_header.properties == header.properties
    assert pamqp.frame.marshal(guarded_header, channel) == frame


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(hostile=hostile_properties(USER, TENANT, MESSAGE_ID))
def test_what_stock_pamqp_cannot_take_reads_as_unreadable_with_its_publisher(
    stock: Any, hostile: tuple[str, bytes]
) -> None:
    kind, raw = hostile
    frame = frame_of(raw)
    try:
        stock_header = stock(frame)[2]
    except Exception:  # what aiormq closes the connection for
        pass
    else:
        why = within_bounds(stock_header.properties.headers or {}, len(frame))
        assert why is not None, f"pamqp now reads {kind} within remit's bounds: the guard may not be needed for it"

    count, channel, header = guarded(stock)(frame)

    payload = frame[7:-1]
    assert (count, channel, header.body_size) == (len(frame), 1, 100)
    noted = Unreadable.taken_from(header.properties.headers)
    assert noted is not None, kind
    assert (noted.length, noted.sha256) == (len(payload), hashlib.sha256(payload).hexdigest())
    assert header.properties.user_id == USER, "RabbitMQ validated it: it always reads"
    assert within_bounds(header.properties.headers or {}, 0) is None, "what is kept is within bounds"


def test_the_reported_attack_800_levels_is_unreadable_not_a_recursion_error(stock: Any) -> None:
    frame = frame_of(payment_properties(USER, TENANT, MESSAGE_ID, (b"deep", nested(800))))
    with pytest.raises(RecursionError):
        stock(frame)

    header = header_of(guarded(stock)(frame))
    noted = Unreadable.taken_from(header.properties.headers)
    assert noted is not None
    assert "RecursionError" in noted.why
    assert header.properties.headers == {"tenantUUID": TENANT}, "the readable entries stay; the deep one goes"
    assert (header.properties.content_type, header.properties.message_id) == ("application/json", MESSAGE_ID)


def test_a_table_just_past_the_depth_bound_is_unreadable_though_pamqp_reads_it(stock: Any) -> None:
    at_bound = frame_of(payment_properties(USER, TENANT, MESSAGE_ID, (b"d", nested(MAX_DEPTH - 1))))
    past = frame_of(payment_properties(USER, TENANT, MESSAGE_ID, (b"d", nested(MAX_DEPTH))))
    assert stock(past)[2].properties.headers["d"]  # pamqp reads both

    assert UNREADABLE not in guarded(stock)(at_bound)[2].properties.headers
    assert "deeper than" in guarded(stock)(past)[2].properties.headers[UNREADABLE]["why"]


def test_a_publisher_cannot_say_its_own_properties_are_unreadable(stock: Any) -> None:
    forged = frame_of(payment_properties(USER, TENANT, MESSAGE_ID, (UNREADABLE.encode(), b"F" + struct.pack(">I", 0))))
    header = header_of(guarded(stock)(forged))
    assert header.properties.headers == {"tenantUUID": TENANT}


def test_other_frames_and_broken_frames_are_pamqp_s_own(stock: Any) -> None:
    deliver = pamqp.frame.marshal(spec.Basic.Deliver("tag", 7, False, "payments", "a.payment"), 1)
    body = pamqp.frame.marshal(ContentBody(b"\xff" * 10), 1)
    guard = guarded(stock)
    assert pamqp.frame.marshal(guard(deliver)[2], 1) == pamqp.frame.marshal(stock(deliver)[2], 1) == deliver
    assert guard(body)[2].value == stock(body)[2].value
    broken = frame_of(payment_properties(USER, TENANT, MESSAGE_ID, timestamp=b"\xff" * 8))[:-1] + b"\x00"
    with pytest.raises(pamqp.exceptions.UnmarshalingException, match="Last byte"):
        guard(broken)


def test_a_not_utf8_property_is_dropped_and_the_rest_kept(stock: Any) -> None:
    frame = frame_of(payment_properties(USER, TENANT, MESSAGE_ID, correlation_id=shortstr(b"\xff\xfe")))
    with pytest.raises(pamqp.exceptions.UnmarshalingException):
        stock(frame)

    properties = header_of(guarded(stock)(frame)).properties
    assert properties.correlation_id is None
    assert (properties.user_id, properties.message_id, properties.delivery_mode) == (USER, MESSAGE_ID, 2)


async def _frames_of(stream: bytes) -> list[str]:
    reader = asyncio.StreamReader()
    reader.feed_data(stream)
    reader.feed_eof()
    receiver, seen = FrameReceiver(reader), []
    async for _, _, frame in receiver:
        seen.append(type(frame).__name__)
    return seen


async def test_aiormq_s_receiver_reads_past_a_hostile_header_only_with_the_guard(stock: Any) -> None:
    body = b"{}" * 50
    deliver = pamqp.frame.marshal(spec.Basic.Deliver("tag", 7, False, "payments", "a.payment"), 1)
    header = frame_of(payment_properties(USER, TENANT, MESSAGE_ID, (b"deep", nested(800))), len(body))
    stream = deliver + header + pamqp.frame.marshal(ContentBody(body), 1)
    installed = pamqp.frame.unmarshal

    pamqp.frame.unmarshal = stock
    try:
        with pytest.raises(RecursionError):
            await _frames_of(stream)
        amqp_guard.install()
        seen = await _frames_of(stream)
    finally:
        pamqp.frame.unmarshal = installed

    assert seen == ["Deliver", "ContentHeader", "ContentBody"]

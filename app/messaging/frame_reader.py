"""AMQP frames read out of whatever bytes have arrived, instead of three awaited reads per frame.

aiormq's `FrameReceiver` reads a frame with three `readexactly` calls under a lock into a `BytesIO`: a
delivery is three frames (method, content header, body), so nine awaited reads per payment, which cost
the consumer more than the frames' own decoding (docs/benchmarks.md, "Consumer"). This receiver reads what
the socket has (up to CHUNK bytes) and cuts every complete frame out of it. The frames are pamqp's objects
(a delivery's three decoded in app/messaging/frame_decoding.py, any other by pamqp) and the errors are
aiormq's: a connection that ends mid-frame, or fails, is an `AMQPConnectionError`; one that ended between
frames ends the iteration; a protocol header in reply to ours is a `ProtocolSyntaxError`.

`install()` makes aiormq's connections use it (aiormq builds its receiver by that module-level name when it
connects); aiormq is pinned, and tests/unit/test_frame_reader.py checks it frame for frame against aiormq's
own receiver on streams cut at every boundary.

A consumer registered with `deliver_direct` gets its deliveries from the receiver itself: their frames never
reach aiormq's connection loop, the channel's frame queue, its reader task or its `DeliveredMessage`; that
path, three queue hand-overs and task switches a delivery, cost more than remit's own checks of it
(docs/benchmarks.md, "Consumer"). A channel's deliveries are handed over in the order they arrive, and every
other frame goes on to aiormq as before. Because aiormq times the connection's liveness by the frames it
sees, a receiver that handed deliveries over yields a heartbeat before it waits for more bytes.
"""

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiormq.connection
import pamqp.frame
from aiormq.connection import ReceivedFrame
from aiormq.exceptions import AMQPConnectionError, InvalidFrameError, ProtocolSyntaxError
from pamqp import commands as spec
from pamqp.body import ContentBody
from pamqp.exceptions import PAMQPException
from pamqp.header import ContentHeader
from pamqp.heartbeat import Heartbeat

from app.messaging.frame_decoding import FRAME_HEADER, bare_header, decode_frame

log = logging.getLogger("remit.amqp")  # every remit connection reads with this receiver

CHUNK = 256 * 1024
PROTOCOL_HEADER = b"AMQP"
# What a receiver yields after handing deliveries over, so that aiormq sees the connection alive.
_ALIVE: ReceivedFrame = (8, 0, Heartbeat())

# (the aiormq channel it came on, its Basic.Deliver, its content header, its whole body)
Receive = Callable[[Any, spec.Basic.Deliver, ContentHeader, bytes], None]


@dataclass(frozen=True, slots=True)
class _Sink:
    channel: Any  # aiormq's channel the consumer was started on
    receive: Receive


# consumer tag -> where its deliveries go; a tag is unique to one basic.consume (remit's carry a uuid4)
_SINKS: dict[str, _Sink] = {}


def deliver_direct(channel: Any, consumer_tag: str, receive: Receive) -> None:
    """From now on, `consumer_tag`'s deliveries on `channel` go to `receive` inside the frame receiver, in the order
    they arrive, when the channel's connection reads with BufferedFrameReceiver (install()); on any other
    receiver they take aiormq's path. Register before `basic_consume` with that tag, so that no delivery of it
    takes the other path first. `receive` must not wait: it runs inside the connection's reader."""
    _SINKS[consumer_tag] = _Sink(channel, receive)


def forget(consumer_tag: str) -> None:
    _SINKS.pop(consumer_tag, None)


@dataclass(slots=True)
class _Assembly:
    """A delivery whose method frame has arrived and whose header and body frames are still coming."""

    sink: _Sink
    deliver: spec.Basic.Deliver
    header: ContentHeader | None = None
    parts: list[bytes] = field(default_factory=list)
    size: int = 0

    def add(self, frame: object) -> bool:
        """Take the delivery's next frame; True once its body is complete."""
        if self.header is None:
            if not isinstance(frame, ContentHeader):
                raise InvalidFrameError(f"unexpected frame {frame!r} instead of a content header")
            self.header = frame
            return frame.body_size == 0
        if not isinstance(frame, ContentBody):
            raise InvalidFrameError(f"unexpected frame {frame!r} inside a delivery's body")
        self.parts.append(frame.value)
        self.size += len(frame.value)
        return self.size >= self.header.body_size

    def hand_over(self) -> None:
        assert self.header is not None
        body = self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)
        try:
            self.sink.receive(self.sink.channel, self.deliver, self.header, body)
        except Exception:  # as aiormq does with a failed consumer: logged; the connection keeps reading
            log.exception("receiving delivery %s failed", self.deliver.delivery_tag)


class BufferedFrameReceiver(aiormq.connection.FrameReceiver):
    def __init__(self, reader: asyncio.StreamReader) -> None:
        super().__init__(reader)
        self._buffer = b""
        self._at = 0
        self._handed_over = False  # deliveries went to their consumers since aiormq last got a frame
        self._assembling: dict[int, _Assembly] = {}  # channel number -> its delivery in progress

    async def get_frame(self) -> ReceivedFrame:
        if self._at == len(self._buffer) and self.reader.at_eof():
            raise StopAsyncIteration
        while True:
            size = self._complete_frame_size()
            if size:
                received = self._take(size)
                if not self._hand_over(received):
                    return received
            elif self._handed_over:
                self._handed_over = False
                return _ALIVE
            else:
                await self._read_more()

    def _hand_over(self, received: ReceivedFrame) -> bool:
        """Whether the frame belongs to a delivery of a consumer registered with deliver_direct (and was taken)."""
        _, channel, frame = received
        assembly = self._assembling.get(channel)
        if assembly is None:
            if type(frame) is not spec.Basic.Deliver:
                return False
            sink = _SINKS.get(frame.consumer_tag or "")
            if sink is None or sink.channel.number != channel:
                return False
            self._assembling[channel] = _Assembly(sink, frame)
        elif assembly.add(frame):
            del self._assembling[channel]
            assembly.hand_over()
        self._handed_over = True
        return True

    def _complete_frame_size(self) -> int:
        """The byte count of the next frame when all of it has arrived, else 0."""
        available = len(self._buffer) - self._at
        if available < FRAME_HEADER.size:
            return 0
        if not self.started:
            if self._buffer.startswith(PROTOCOL_HEADER, self._at):
                raise ProtocolSyntaxError("Unexpected AMQP protocol header")
            self.started = True
        _, _, payload = FRAME_HEADER.unpack_from(self._buffer, self._at)
        size: int = FRAME_HEADER.size + payload + 1
        return size if available >= size else 0

    def _take(self, size: int) -> ReceivedFrame:
        at = self._at
        self._at += size
        decoded = decode_frame(self._buffer, at)
        if decoded is not None:
            return decoded
        frame = self._buffer[at : at + size]
        try:
            return pamqp.frame.unmarshal(frame)
        except PAMQPException as e:
            # A publisher's properties nobody can read (a timestamp past year 9999, text that is not UTF-8
            # beside a type only pamqp reads) must not close the connection for every delivery on it: the
            # delivery comes without properties, and the consumer refuses it with a reason (no content type).
            bare = bare_header(self._buffer, at)
            if bare is None:
                raise InvalidFrameError(str(e)) from e
            log.warning("a delivery's AMQP properties could not be read (%s): it is handed on without them", e)
            return bare

    async def _read_more(self) -> None:
        pending = self._buffer[self._at :]
        try:
            chunk = await self.reader.read(CHUNK)
        except OSError as e:  # ConnectionError included: aiormq says which one
            raise AMQPConnectionError(f"Server communication error: {e!r}") from e
        if not chunk:
            raise AMQPConnectionError(f"Server connection unexpectedly closed. Read {len(pending)} bytes of a frame")
        self._buffer, self._at = pending + chunk, 0


AIORMQ_RECEIVER = aiormq.connection.FrameReceiver  # aiormq's own, whatever is installed later


def install() -> None:
    """From now on, every aiormq connection this process opens reads its frames with BufferedFrameReceiver, unless
    another receiver than aiormq's own was put in its place (a test's)."""
    if aiormq.connection.FrameReceiver is AIORMQ_RECEIVER:
        aiormq.connection.FrameReceiver = BufferedFrameReceiver  # type: ignore[misc]

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
"""

import aiormq.connection
import pamqp.frame
from aiormq.connection import ReceivedFrame
from aiormq.exceptions import AMQPConnectionError, InvalidFrameError, ProtocolSyntaxError
from pamqp.exceptions import PAMQPException

from app.messaging.frame_decoding import FRAME_HEADER, decode_frame

CHUNK = 256 * 1024
PROTOCOL_HEADER = b"AMQP"


class BufferedFrameReceiver(aiormq.connection.FrameReceiver):
    _buffer: bytes = b""
    _at: int = 0

    async def get_frame(self) -> ReceivedFrame:
        if self._at == len(self._buffer) and self.reader.at_eof():
            raise StopAsyncIteration
        while True:
            size = self._complete_frame_size()
            if size:
                return self._take(size)
            await self._read_more()

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
            raise InvalidFrameError(str(e)) from e

    async def _read_more(self) -> None:
        pending = self._buffer[self._at :]
        try:
            chunk = await self.reader.read(CHUNK)
        except OSError as e:  # ConnectionError included: aiormq says which one
            raise AMQPConnectionError(f"Server communication error: {e!r}") from e
        if not chunk:
            raise AMQPConnectionError(f"Server connection unexpectedly closed. Read {len(pending)} bytes of a frame")
        self._buffer, self._at = pending + chunk, 0


def install() -> None:
    """From now on, every aiormq connection this process opens reads its frames with BufferedFrameReceiver."""
    aiormq.connection.FrameReceiver = BufferedFrameReceiver  # type: ignore[misc]

"""The one place remit stands in front of its AMQP client: a content header it cannot decode becomes a delivery
marked unreadable, instead of a closed connection.

Why it exists. RabbitMQ passes a message's properties and its headers table through unread, so their bytes are
the publisher's. pamqp (4.0.1, the newest release) decodes them recursively and strictly: a table nested a few
hundred levels deep raises RecursionError, text that is not UTF-8 raises UnicodeDecodeError, a timestamp past the
year 9999 raises ValueError, OverflowError or OSError. aiormq (7.2.4, the newest) turns pamqp's own errors into
InvalidFrameError and lets the others escape its reader; either way it closes the connection. For a consumer that
is every tenant's deliveries on that connection back to the queue, their delivery counts raised, and the same
message closing it again at each redelivery. Upstream has bounded loops (gmr/pamqp#63, #64, fixed in 4.0.1)
but no bound on nesting and no tolerant decoding (as of 2026-12); no aiormq version lets a client handle a frame
it cannot decode.

What it does. `install()` wraps `pamqp.frame.unmarshal`, the function aiormq decodes every frame with. Any frame
other than a content header goes to pamqp unchanged, errors included. A content header pamqp decodes and that is
within remit's bounds (MAX_DEPTH, MAX_VALUES, MAX_HEADERS_BYTES) is pamqp's own object. Otherwise the header is
read property by property (app/messaging/lenient_properties.py): what reads is kept (user_id, which RabbitMQ
validated, always reads), what does not is dropped, and its headers carry UNREADABLE: why, and the raw header's
length and SHA-256. A publisher cannot send UNREADABLE itself: it is removed from every header pamqp decodes.
tests/unit/test_amqp_guard.py checks it against pamqp's own behaviour; tests/unit/test_client_internals.py fails
when any other module of remit assigns into or subclasses a private name of aiormq, pamqp or aio-pika.
"""

import logging
from collections.abc import Callable

import pamqp.frame
from pamqp.constants import FRAME_HEADER
from pamqp.header import ContentHeader

from app.messaging.lenient_properties import UNREADABLE, lenient_header, within_bounds

log = logging.getLogger("remit.amqp")

Decoded = tuple[int, int, pamqp.frame.FrameTypes]
Unmarshal = Callable[[bytes], Decoded]
_CONTENT_HEADER = bytes([FRAME_HEADER])


def install() -> None:
    """From now on every frame this process decodes goes through `guarded` (idempotent)."""
    if not getattr(pamqp.frame.unmarshal, "remit_guard", False):
        pamqp.frame.unmarshal = guarded(pamqp.frame.unmarshal)  # type: ignore[assignment]


def guarded(unmarshal: Unmarshal) -> Unmarshal:
    def unmarshal_guarded(data_in: bytes) -> Decoded:
        if data_in[:1] != _CONTENT_HEADER:
            return unmarshal(data_in)
        return _content_header(unmarshal, data_in)

    unmarshal_guarded.remit_guard = True  # type: ignore[attr-defined]
    return unmarshal_guarded


def _content_header(unmarshal: Unmarshal, data_in: bytes) -> Decoded:
    why: str | None
    try:
        decoded = unmarshal(data_in)
    except Exception as error:  # RecursionError, OverflowError, OSError and pamqp's own: the publisher's bytes
        why = f"{type(error).__name__} decoding them"
    else:
        header = decoded[2]
        assert isinstance(header, ContentHeader), "a content header frame decodes to one"
        headers = header.properties.headers
        if not headers:
            return decoded
        headers.pop(UNREADABLE, None)  # only this module says so
        why = within_bounds(headers, len(data_in))
        if why is None:
            return decoded
    result = lenient_header(data_in, why)
    if result is None:  # not even the frame around the properties is whole: a broken stream, as before
        return unmarshal(data_in)
    log.warning("a delivery's AMQP properties could not be read (%s): it is marked unreadable", why)
    return result

"""Deliveries handed to the consumer inside aiormq's channel reader, without a task per delivery.

aiormq starts a task for every delivery it reads (`Channel._on_deliver_frame`), and that task, its wrapper and
its bookkeeping were the largest single cost of a delivery left in the consumer once aio-pika's message was
gone (docs/benchmarks.md, "Consumer"). The workers' receive step never waits (it cuts the body, records the
tag, buffers the delivery), so it can run in the reader itself: in delivery order, which is the order the
settlements need, with no task at all.

This reaches into aiormq's channel (`_on_deliver_frame`, `_get_frame`, `_read_content`), so aiormq is pinned
in pyproject.toml and tests/integration/test_delivery_paths.py checks the hook on the real broker; on an
aiormq without them the channel keeps its own path (one task per delivery), which is slower, not wrong.
"""

import logging
from collections.abc import Callable
from typing import Any

from aiormq.abc import DeliveredMessage
from pamqp.header import ContentHeader

log = logging.getLogger("remit.consumer")

Receive = Callable[[DeliveredMessage], None]
_HOOKS = ("_on_deliver_frame", "_get_frame", "_read_content")


def deliver_inline(channel: Any, consumer_tag: str, receive: Receive) -> bool:
    """Make `channel` (aiormq's) call `receive` for `consumer_tag`'s deliveries as it reads them. Install it
    before `basic_consume` with that tag, so that no delivery of it takes the other path first. Returns
    whether it was installed."""
    if not all(hasattr(channel, name) for name in _HOOKS):
        log.warning("aiormq's channel has no delivery hook here: one task per delivery (slower)")
        return False
    own_path = channel._on_deliver_frame
    get_frame, read_content = channel._get_frame, channel._read_content

    async def on_deliver_frame(frame: Any) -> None:
        if frame.consumer_tag != consumer_tag:
            await own_path(frame)  # another consumer on this channel: aiormq's own path
            return
        header = await get_frame()
        if not isinstance(header, ContentHeader):
            raise ValueError(f"unexpected frame {header!r} instead of a content header")
        message = await read_content(frame, header)
        try:
            receive(message)
        except Exception:  # as aiormq does with a failed consumer task: logged; the channel keeps reading
            log.exception("receiving delivery %s failed", frame.delivery_tag)

    channel._on_deliver_frame = on_deliver_frame
    return True

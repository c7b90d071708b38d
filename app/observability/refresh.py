"""Gauges refreshed in the background: a failed refresh is logged and tried again, never fatal."""

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("remit.metrics")


async def refresh_every(refresh: Callable[[], Awaitable[None]], every_seconds: float, what: str) -> None:
    while True:
        try:
            await refresh()
        except Exception:  # a scrape gap is better than a dead consumer
            log.warning("could not refresh %s", what, exc_info=True)
        await asyncio.sleep(every_seconds)

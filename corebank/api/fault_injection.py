"""The ASGI wrapper that applies the fault plan, outside the FastAPI app.

It sits outside because the one fault ASGI cannot express, closing the connection without an answer, needs
the server's own `send`: uvicorn's HTTP/1.1 protocols hand the application their request cycle's bound
`send`, whose cycle owns the connection's transport. Starlette's middleware would only see a wrapper.
"""

import asyncio
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from corebank.api.errors import error_response
from corebank.errors import InjectedError, Unavailable
from corebank.faults import Faults

UNFAULTED = frozenset({"/_faults", "/healthz"})
NOT_API = frozenset({"/readyz", "/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"})
BOOKING = frozenset({"/transfers", "/transfers/batch"})


class FaultInjection:
    def __init__(self, app: ASGIApp, faults: Faults) -> None:
        self.app = app
        self.faults = faults

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in UNFAULTED:
            return await self.app(scope, receive, send)
        if (left := self.faults.down_for()) > 0:
            refusal = error_response(503, Unavailable.code, "the core is down (injected fault)", retry_after=left)
            return await refusal(scope, receive, send)
        if path not in NOT_API:
            await self.faults.delay()
            if self.faults.error():
                failure = error_response(500, InjectedError.code, "injected failure: nothing was done")
                return await failure(scope, receive, send)
            if scope["method"] == "POST" and path in BOOKING and self.faults.drop():
                send = _lose_success(send)
        await self.app(scope, receive, send)


def _lose_success(send: Send) -> Send:
    """A `send` that closes the connection instead of starting a 2xx answer (the outcome is committed by then)."""
    transport: Any = getattr(getattr(send, "__self__", None), "transport", None)
    if transport is None:
        raise RuntimeError(
            "the ASGI server does not expose its transport: the drop fault needs uvicorn (h11 or httptools)"
        )
    lost = False

    async def sender(message: Message) -> None:
        nonlocal lost
        if message["type"] == "http.response.start" and 200 <= message["status"] < 300:
            lost = True
            transport.abort()
            await asyncio.sleep(0)  # let the server see the connection go before the app returns
        if not lost:
            await send(message)

    return sender

"""The bound on a request's body, enforced around the whole admin app (the outermost middleware), before
any parsing, spooling or authentication can read it.

Each route class has its limit: bank-file uploads (`POST /v1/batches`, `POST /console/batches`) the upload
limit, every other request the small one (JSON commands, console forms, the login). The body is counted as
the app receives it, chunked or not: past the limit the app's next read raises `BodyTooLarge`, a 413 that
the app's own handlers answer (problem+json for the API, a page for the console) and that every parser
treats as a failed read (Starlette's multipart parser closes the files it spooled); once the response has
started, a read past the limit waits instead, reading nothing more (see `_refusal`). A body declared larger
than its limit fails at the first read, before any byte of it is taken from the socket (so a client that
sent `Expect: 100-continue` is never asked for it). An answer given before the body was read to its end
(a 413, or a 401 from a route that reads only after authentication) says `Connection: close`: the server
then reads no more of it, instead of reading and discarding the rest to keep the connection.

Starlette's own RequestBodyLimitMiddleware counts the same way, but when a route answers without reading
it swaps that answer for a plain-text 413 outside the app's error handlers, and it leaves the connection
open, so the rest of an unread body is still read and discarded.
"""

from collections.abc import Callable
from dataclasses import dataclass

import anyio
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.admin.errors import problem

MULTIPART_OVERHEAD = 64 * 1024  # boundaries, part headers and the form's small fields around the file
UPLOAD_ROUTES = frozenset({("POST", "/v1/batches"), ("POST", "/console/batches")})
REQUEST, UPLOAD = "request", "upload"  # the route classes, as metrics and logs name them
DECLARED, COUNTED = "declared", "counted"  # how a body was found too large

# (route class, how, the request's scope): called once per refused body.
OnRefusal = Callable[[str, str, Scope], None]


class BodyTooLarge(HTTPException):
    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is larger than {limit} bytes, the most this route takes")


@dataclass(frozen=True, slots=True)
class BodyLimits:
    request: int
    upload_file: int

    @property
    def upload(self) -> int:
        return self.upload_file + MULTIPART_OVERHEAD

    def of(self, method: str, path: str) -> tuple[str, int]:
        """The route class of a request and the most bytes its body may have."""
        return (UPLOAD, self.upload) if (method, path) in UPLOAD_ROUTES else (REQUEST, self.request)


class BodyLimit:
    def __init__(self, app: ASGIApp, limits: BodyLimits, on_refusal: OnRefusal) -> None:
        self.app = app
        self.limits = limits
        self.on_refusal = on_refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        route_class, limit = self.limits.of(scope["method"], scope["path"])
        body = _CountedBody(scope, route_class, limit, receive, self.on_refusal)

        async def send_closing(message: Message) -> None:
            if message["type"] == "http.response.start":
                body.answered = True
                if not body.complete:
                    message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, body.receive, send_closing)
        except BodyTooLarge as exc:  # the app's handlers answer it; this is for a read outside their reach
            if body.answered:
                raise
            await problem(413, "content_too_large", str(exc.detail), headers={"Connection": "close"})(
                scope, receive, send
            )


class _CountedBody:
    def __init__(self, scope: Scope, route_class: str, limit: int, receive: Receive, refused: OnRefusal) -> None:
        self.scope = scope
        self.route_class = route_class
        self.limit = limit
        self._receive = receive
        self._refused = refused
        self.read = 0
        self.over = False
        self.answered = False  # the response has started
        headers = Headers(scope=scope)
        length = headers.get("content-length")
        self.declared = int(length) if length is not None and length.isdigit() else None
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        self.complete = not chunked and not self.declared  # no body to read

    async def receive(self) -> Message:
        if not self.over and self.declared is not None and self.declared > self.limit:
            self._refuse(DECLARED)
        if self.over:
            return await self._refusal()
        message = await self._receive()
        if message["type"] == "http.request":
            self.read += len(message.get("body", b""))
            self.complete = not message.get("more_body", False)
            if self.read > self.limit:
                self._refuse(COUNTED)
                return await self._refusal()
        return message

    def _refuse(self, how: str) -> None:
        self.over = True
        self._refused(self.route_class, how, self.scope)

    async def _refusal(self) -> Message:
        """A read past the limit fails while there is still a 413 to answer. Once the response has started,
        the reader can only be a streaming response listening for the client to go (Starlette reads the body
        for that when the server's ASGI spec is below 2.4, as uvicorn's is): it waits, reading nothing more,
        until the response ends and the connection closes."""
        if not self.answered:
            raise BodyTooLarge(self.limit)
        await anyio.sleep_forever()
        raise BodyTooLarge(self.limit)  # not reached: the wait ends only by cancellation

"""The bound on request bodies (app/admin/body_limit.py), as a plain ASGI middleware around small apps: no
server, no sockets. What the app reads is counted as it arrives; past the route's limit its read fails
(413) and nothing more is taken from the server; a body declared too large fails at the first read without
any of it being taken; an answer given before the body was read to its end closes the connection."""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from starlette.responses import StreamingResponse
from starlette.routing import Match
from starlette.types import Message, Receive, Scope, Send

from app.admin.app import create_admin_app
from app.admin.body_limit import (
    COUNTED,
    DECLARED,
    MULTIPART_OVERHEAD,
    REQUEST,
    UPLOAD,
    UPLOAD_ROUTES,
    BodyLimit,
    BodyLimits,
    BodyTooLarge,
)
from app.settings import Settings

LIMITS = BodyLimits(request=100, upload_file=1000)
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class Server:
    """What uvicorn gives the app: the body in pieces, and what the app sends back."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = list(pieces)
        self.taken = 0  # pieces the app's reads took from the server
        self.sent: list[Message] = []

    async def receive(self) -> Message:
        if not self.pieces:
            return {"type": "http.disconnect"}
        self.taken += 1
        piece = self.pieces.pop(0)
        return {"type": "http.request", "body": piece, "more_body": bool(self.pieces)}

    async def send(self, message: Message) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int:
        return int(self.sent[0]["status"])

    @property
    def headers(self) -> dict[bytes, bytes]:
        return dict(self.sent[0]["headers"])


def scope(method: str = "POST", path: str = "/v1/dead-letters/replay", **headers: str) -> Scope:
    raw = [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]
    return {"type": "http", "method": method, "path": path, "headers": raw, "client": ("203.0.113.9", 5000)}


async def reads_all(scope: Scope, receive: Receive, send: Send) -> None:
    """Reads the body to its end (a failed read is answered 413 by the app's own handler, as FastAPI's)."""
    try:
        while (await receive()).get("more_body"):
            pass
    except BodyTooLarge:
        await send({"type": "http.response.start", "status": 413, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def answers_unread(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers without reading (a route that checks the caller first)."""
    await send({"type": "http.response.start", "status": 401, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def run(app: App, request: Scope, pieces: list[bytes]) -> tuple[Server, list[tuple[str, str]]]:
    refused: list[tuple[str, str]] = []
    server = Server(pieces)

    def on_refusal(route_class: str, how: str, scope: Scope) -> None:
        refused.append((route_class, how))

    await BodyLimit(app, LIMITS, on_refusal)(request, server.receive, server.send)
    return server, refused


def test_uploads_take_the_upload_limit_and_everything_else_the_small_one() -> None:
    assert LIMITS.of("POST", "/v1/batches") == (UPLOAD, 1000 + MULTIPART_OVERHEAD)
    assert LIMITS.of("POST", "/console/batches") == (UPLOAD, 1000 + MULTIPART_OVERHEAD)
    for method, path in [("GET", "/v1/batches"), ("POST", "/v1/batches/"), ("POST", "/console/login")]:
        assert LIMITS.of(method, path) == (REQUEST, 100)


def test_the_upload_routes_are_routes_of_the_app() -> None:
    """A renamed upload route would silently fall to the small limit: the table names routes that exist."""
    app = create_admin_app(Settings())
    for method, path in UPLOAD_ROUTES:
        asked = {"type": "http", "method": method, "path": path, "root_path": "", "headers": []}
        assert any(route.matches(asked)[0] == Match.FULL for route in app.router.routes), (method, path)
    asked = {"type": "http", "method": "POST", "path": "/v1/nothing", "root_path": "", "headers": []}
    assert not any(route.matches(asked)[0] == Match.FULL for route in app.router.routes)  # the check can fail


@pytest.mark.parametrize(("size", "status"), [(99, 200), (100, 200), (101, 413)])
async def test_a_counted_body_at_below_and_above_the_limit(size: int, status: int) -> None:
    pieces = [b"x" * 60, b"x" * (size - 60)]
    server, refused = await run(reads_all, scope(transfer_encoding="chunked"), pieces)
    assert server.status == status
    assert refused == ([(REQUEST, COUNTED)] if status == 413 else [])


async def test_a_chunked_body_stops_being_read_at_the_limit() -> None:
    server, refused = await run(reads_all, scope(transfer_encoding="chunked"), [b"x" * 60] * 1000)
    assert (server.status, server.taken) == (413, 2)  # the piece that crossed the limit, nothing after it
    assert server.headers[b"connection"] == b"close"
    assert refused == [(REQUEST, COUNTED)]


async def test_a_body_declared_too_large_is_refused_before_any_of_it_is_taken() -> None:
    server, refused = await run(reads_all, scope(content_length="101"), [b"x" * 101])
    assert (server.status, server.taken) == (413, 0)
    assert server.headers[b"connection"] == b"close"
    assert refused == [(REQUEST, DECLARED)]


async def test_an_upload_route_takes_its_own_limit() -> None:
    size = 1000 + MULTIPART_OVERHEAD
    server, _ = await run(reads_all, scope(path="/v1/batches", content_length=str(size)), [b"x" * size])
    assert server.status == 200
    server, _ = await run(reads_all, scope(path="/v1/batches", content_length=str(size + 1)), [b"x" * (size + 1)])
    assert (server.status, server.taken) == (413, 0)


@pytest.mark.parametrize(
    ("headers", "closes"),
    [
        ({"content_length": "50"}, True),  # a body the route never read: not read now either
        ({"transfer_encoding": "chunked"}, True),
        ({"content_length": "0"}, False),  # no body: the connection may serve the next request
        ({}, False),
    ],
)
async def test_an_answer_before_the_body_is_read_closes_the_connection(headers: dict[str, str], closes: bool) -> None:
    server, refused = await run(answers_unread, scope(**headers), [b"x" * 50])
    assert server.status == 401
    assert (b"connection" in server.headers) is closes
    assert server.taken == 0
    assert refused == []


async def test_a_body_read_to_its_end_keeps_the_connection() -> None:
    server, _ = await run(reads_all, scope(content_length="50"), [b"x" * 50])
    assert server.status == 200
    assert b"connection" not in server.headers


async def test_a_refusal_no_handler_answered_is_answered_413_in_the_problem_shape() -> None:
    async def lets_it_through(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()

    server, _ = await run(lets_it_through, scope(content_length="500"), [b"x" * 500])
    assert server.status == 413
    assert server.headers[b"content-type"] == b"application/problem+json"
    assert server.headers[b"connection"] == b"close"
    body: Any = server.sent[1]["body"]
    assert b'"code":"content_too_large"' in body


class SlowServer(Server):
    """Hands out pieces as a network does, a little at a time, so the response can start meanwhile."""

    async def receive(self) -> Message:
        await asyncio.sleep(0.001)
        return await super().receive()


async def test_a_streaming_answer_is_not_cut_by_a_body_read_only_to_listen_for_the_client() -> None:
    """Starlette's StreamingResponse reads the body to notice a disconnect (ASGI spec below 2.4, as uvicorn
    says): past the limit, after the response started, that reader waits instead of failing the response."""

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(5):
            await asyncio.sleep(0.01)
            yield b"row\n"

    refused: list[tuple[str, str]] = []
    server = SlowServer([b"x" * 60] * 1000)
    request = {**scope(method="GET", path="/v1/batches/b/status-report", transfer_encoding="chunked")}
    request["asgi"] = {"version": "3.0", "spec_version": "2.3"}
    limit = BodyLimit(
        StreamingResponse(chunks()), LIMITS, lambda route_class, how, _: refused.append((route_class, how))
    )
    await asyncio.wait_for(limit(request, server.receive, server.send), 5)
    assert server.status == 200
    assert b"".join(m.get("body", b"") for m in server.sent[1:]) == b"row\n" * 5  # the whole answer
    assert server.sent[-1].get("more_body", False) is False
    assert server.headers[b"connection"] == b"close"
    assert server.taken == 2  # nothing read past the limit while it waited
    assert refused == [(REQUEST, COUNTED)]

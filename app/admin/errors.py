"""Every error the JSON API answers has one shape: RFC 9457 problem details, `application/problem+json`.

`{"type": "about:blank", "title": <the status's phrase>, "status": <code>, "code": <stable machine-readable
name>, "detail": <what is wrong and what is accepted>, "errors": [<one per invalid input>]}`. remit's own
caller errors take their status from app/errors.py's one table; FastAPI's request validation, routing (404,
405 with a complete `Allow`), authentication and anything unexpected (500, with no trace or SQL text) answer
in the same shape. The console (/console) answers with a page instead.
"""

import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Match

from app.errors import CallerError, NotFound, OverLimit, http_status

PROBLEM_JSON = "application/problem+json"
INVALID_REQUEST = "invalid_request"
INTERNAL_ERROR = "internal_error"
PROBED_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
SHOWN_FIELD_ERRORS = 3  # in `detail`; `errors` has all of them
HtmlError = Callable[[Request, int, str], Awaitable[Response]]
log = logging.getLogger("remit.admin")


class FieldError(BaseModel):
    location: list[str | int] = Field(description='Where: `["query", "limit"]`, `["body", "ids", 0]`, ...')
    message: str = Field(description="What is wrong and what is accepted.")
    type: str = Field(description="The kind of error (pydantic's error type, e.g. `less_than_equal`).")


class Problem(BaseModel):
    """RFC 9457 problem details: the shape of every error the API answers."""

    type: str = Field(default="about:blank", description="Always `about:blank`: `status` and `code` tell the kind.")
    title: str = Field(description="The HTTP status's phrase.")
    status: int = Field(description="The HTTP status code, repeated.")
    code: str = Field(
        description="Stable machine-readable kind: `invalid_request` (input outside the schema), `unauthorized`, "
        "`not_found`, `method_not_allowed`, `internal_error`, or remit's own error (`batch_refused`, "
        "`dead_letter_not_found`, `replay_refused`, `discard_refused`, `forbidden`, ...)."
    )
    detail: str = Field(description="What is wrong, and what to do or send instead.")
    errors: list[FieldError] = Field(default_factory=list, description="One per invalid input (422 only).")


def problem(
    status: int, code: str, detail: str, errors: Sequence[FieldError] = (), headers: dict[str, str] | None = None
) -> JSONResponse:
    body = Problem(title=HTTPStatus(status).phrase, status=status, code=code, detail=detail, errors=list(errors))
    return JSONResponse(body.model_dump(mode="json"), status, headers=headers, media_type=PROBLEM_JSON)


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


# `code` of an HTTP-level error, fixed here: HTTPStatus's phrases change between Python versions.
STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "content_too_large",
    415: "unsupported_media_type",
    422: INVALID_REQUEST,
    429: "too_many_requests",
    500: INTERNAL_ERROR,
    503: "service_unavailable",
}


def status_code_name(status: int) -> str:
    return STATUS_CODES.get(status) or snake(HTTPStatus(status).phrase.replace(" ", "").replace("-", ""))


def caller_message(exc: CallerError) -> str:
    """The error as an HTTP client should read it: never a CLI command or flag."""
    if exc.over_http is not None:
        return exc.over_http
    message = str(exc)
    return message.split(";")[0] if isinstance(exc, NotFound) else message  # after `;`, a CLI hint


def field_errors(exc: RequestValidationError) -> list[FieldError]:
    return [
        FieldError(location=list(error.get("loc", ())), message=_message(error), type=str(error["type"]))
        for error in exc.errors()
    ]


def _message(error: dict[str, Any]) -> str:
    return str(error.get("msg", "")).removeprefix("Value error, ")  # pydantic's prefix for a validator's text


def summary(errors: Sequence[FieldError]) -> str:
    shown = [f"{' '.join(str(part) for part in e.location)}: {e.message}" for e in errors[:SHOWN_FIELD_ERRORS]]
    more = len(errors) - len(shown)
    return "; ".join(shown) + (f"; and {more} more (see errors)" if more > 0 else "")


def allowed_methods(app: FastAPI, request: Request) -> list[str]:
    """Every method some route answers on this path (Starlette's own 405 names only the first route's)."""
    return [
        method
        for method in PROBED_METHODS
        if any(route.matches({**request.scope, "method": method})[0] == Match.FULL for route in app.router.routes)
    ]


def install_error_handlers(app: FastAPI, html_error: HtmlError) -> None:
    def for_console(request: Request) -> bool:
        return request.url.path.startswith("/console")

    async def caller_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, CallerError)
        code, message = int(http_status(exc)), caller_message(exc)
        if for_console(request):
            return await html_error(request, code, message)
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, OverLimit) else None
        return problem(code, snake(type(exc).__name__), message, headers=headers)

    async def invalid_request(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        errors = field_errors(exc)
        if for_console(request):
            return await html_error(request, 422, summary(errors))
        return problem(422, INVALID_REQUEST, summary(errors), errors)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if for_console(request):
            return await html_error(request, exc.status_code, str(exc.detail))
        headers: dict[str, Any] = dict(exc.headers or {})
        detail = str(exc.detail)
        if exc.status_code == HTTPStatus.METHOD_NOT_ALLOWED:
            allow = allowed_methods(app, request)
            headers["Allow"] = ", ".join(allow)
            detail = f"{request.method} is not allowed on {request.url.path}: use {' or '.join(allow)}"
        elif exc.status_code == HTTPStatus.NOT_FOUND and detail == HTTPStatus.NOT_FOUND.phrase:
            detail = f"no such route: {request.url.path} (the API's routes are in /openapi.json)"
        return problem(exc.status_code, status_code_name(exc.status_code), detail, headers=headers)

    async def unexpected(request: Request, exc: Exception) -> Response:
        # Starlette logs the traceback after this answer; the caller gets no trace, SQL or driver text.
        detail = "the server could not answer this request; the error is logged"
        if for_console(request):
            return await html_error(request, 500, detail)
        return problem(500, INTERNAL_ERROR, detail)

    app.add_exception_handler(CallerError, caller_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, unexpected)

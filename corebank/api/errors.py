"""One error shape for every answer that is not a success, and the status codes each route declares."""

import logging
import math
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Scope

from corebank.errors import CoreBankError, Unavailable
from corebank.schemas import ErrorBody, ErrorDetail, ErrorInfo

log = logging.getLogger("corebank")

DESCRIPTIONS = {
    401: "No credential, or not a valid one (`unauthenticated`): send `Authorization: Bearer <token>` with a token "
    "this core gave the client. A route that needs none refuses a wrong one too.",
    404: "No such account in that currency (`account_not_found`).",
    422: "The request is invalid (`validation_failed`, with details); see the route for other codes.",
    500: "Unexpected failure (`internal_error`) or an injected one (`injected_error`). For a transfer the outcome "
    "is then unknown: ask GET /transfers/{key} before sending again.",
    503: "The core is down or cannot reach its database (`unavailable`; `Retry-After` when known). For a transfer "
    "the outcome may be unknown: ask GET /transfers/{key}.",
}


def declared(*codes: int, **described: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for error statuses; `described` overrides a description (`_409="..."`)."""
    docs = {**DESCRIPTIONS, **{int(k.lstrip("_")): v for k, v in described.items()}}
    return {code: {"model": ErrorBody, "description": docs[code]} for code in codes}


def error_response(
    status: int,
    code: str,
    message: str,
    details: list[ErrorDetail] | None = None,
    retry_after: float | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    body = ErrorBody(error=ErrorInfo(code=code, message=message, details=details or []))
    sent = {**(headers or {}), **({"Retry-After": str(math.ceil(retry_after))} if retry_after else {})}
    return JSONResponse(body.model_dump(mode="json"), status_code=status, headers=sent or None)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(CoreBankError, _ours)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(DBAPIError, _database)
    app.add_exception_handler(PoolTimeout, _database)
    app.add_exception_handler(OSError, _database)
    app.add_exception_handler(Exception, _unexpected)


def route_of(scope: Scope) -> str:
    """The route's template (`/accounts/{bsb}/...`), never the path itself, which may hold account numbers."""
    return str(getattr(scope.get("route"), "path", "(no route)"))


async def _ours(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, CoreBankError)
    return error_response(exc.status, exc.code, str(exc), headers=exc.headers)


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    # loc and msg only: pydantic's `input` would echo account numbers back into logs and clients.
    details = [ErrorDetail(location=".".join(str(p) for p in e["loc"]), message=e["msg"]) for e in exc.errors()]
    return error_response(422, "validation_failed", "the request is invalid", details)


async def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    if exc.status_code == 400:  # FastAPI's answer to a body it cannot even decode (not UTF-8): still invalid input
        return error_response(422, "validation_failed", "the request body is not JSON in UTF-8")
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    return error_response(exc.status_code, code, str(exc.detail), headers=exc.headers)  # a 405's Allow


async def _database(request: Request, exc: Exception) -> JSONResponse:
    # The class and SQLSTATE only: SQLAlchemy's message carries the statement.
    sqlstate = getattr(getattr(exc, "orig", None), "sqlstate", None)
    lost = isinstance(exc, OperationalError | InterfaceError | PoolTimeout | OSError) or getattr(
        exc, "connection_invalidated", False
    )
    log.error(
        "database error on %s %s: %s (sqlstate %s)",
        request.method,
        route_of(request.scope),
        type(exc).__name__,
        sqlstate,
    )
    if lost:
        return error_response(503, Unavailable.code, "the core's database is unreachable; try again later")
    return error_response(500, "internal_error", "the core failed unexpectedly")


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    # Starlette sends this answer, then re-raises; QuietErrors (app.py) logs it without the message.
    return error_response(500, "internal_error", "the core failed unexpectedly")

"""What the OpenAPI document promises beyond the routes themselves: the statuses each route can answer (in
the one problem shape), the limits of what it takes (the database columns' ranges), strict query strings
(an unknown parameter, `offset` among them, is an error, not ignored), and every error response declared as
`application/problem+json`."""

from http import HTTPStatus
from typing import Annotated, Any

from fastapi import FastAPI, Path, Query, Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute
from pydantic import Field

from app.admin.errors import PROBLEM_JSON, Problem
from contracts.message import TENANT_ID_PATTERN

INT32_MAX = 2**31 - 1  # PostgreSQL integer: tenant limits, counts
BIGINT_MAX = 2**63 - 1  # PostgreSQL bigint: dead-letter ids
# Always possible on an API route: no or a bad key, the brake on guessing keys (429 with Retry-After: too many
# failed authentications from the caller's address or naming its key id), input outside the schema, the
# database or broker down, a fault of remit's own. A route that reads a body adds 413 (over the body limit).
COMMON = (401, 422, 429, 500, 503)
_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"description": "`Bearer`", "schema": {"type": "string"}}},
    429: {"Retry-After": {"description": "Seconds to wait before trying again.", "schema": {"type": "integer"}}},
}

# Strict: a JSON `true` or `1.0` is not a number, `"5"` not an integer.
Int32 = Annotated[int, Field(strict=True, le=INT32_MAX)]
RowId = Annotated[int, Field(strict=True, ge=1, le=BIGINT_MAX)]
DeadLetterIdPath = Annotated[int, Path(ge=1, le=BIGINT_MAX, description="A dead letter's id.")]
DeadLetterIdQuery = Annotated[
    int | None, Query(alias="id", ge=1, le=BIGINT_MAX, description="Only this dead letter's entries.")
]
TenantId = Annotated[str, Field(pattern=TENANT_ID_PATTERN, description="Lower case letters, digits, `_`, `-`.")]
TenantIdPath = Annotated[str, Path(pattern=TENANT_ID_PATTERN, description="The tenant's id.")]
TenantQuery = Annotated[
    str | None,
    Query(pattern=TENANT_ID_PATTERN, description="Admin keys only: one tenant. Ignored for tenant keys."),
]


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """`responses=` for a route: the common error statuses and these, each in the problem shape."""
    return {
        status: {"model": Problem, "description": HTTPStatus(status).phrase, **_headers(status)}
        for status in sorted({*COMMON, *statuses})
    }


def _headers(status: int) -> dict[str, Any]:
    return {"headers": _HEADERS[status]} if status in _HEADERS else {}


async def known_query_only(request: Request) -> None:
    """A query parameter the route does not take is refused (422), naming those it takes: a typo or an
    `offset` the API does not implement must not be silently ignored."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    known = query_names(route.dependant)
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        takes = ", ".join(sorted(known)) or "none"
        raise RequestValidationError(
            [
                {
                    "type": "unknown_parameter",
                    "loc": ("query", name),
                    "msg": f"not a parameter of this route; it takes: {takes}",
                }
                for name in unknown
            ]
        )


def query_names(dependant: Dependant) -> set[str]:
    """The query parameters a route takes, its dependencies' included."""
    names = {param.alias for param in dependant.query_params}
    for dependency in dependant.dependencies:
        names |= query_names(dependency)
    return names


def openapi_document(app: FastAPI) -> dict[str, Any]:
    """The OpenAPI document, with every error response as `application/problem+json`."""
    if app.openapi_schema is None:
        document = get_openapi(
            title=app.title,
            version=app.version,
            description=app.description,
            routes=app.routes,
        )
        for operations in document.get("paths", {}).values():
            for operation in operations.values():
                for status, response in operation.get("responses", {}).items():
                    content = response.get("content", {})
                    if status.isdigit() and int(status) >= 400 and "application/json" in content:
                        content[PROBLEM_JSON] = content.pop("application/json")
        app.openapi_schema = document
    return app.openapi_schema

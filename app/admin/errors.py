"""One mapping from remit's errors to HTTP answers: JSON for the API, a page for the console."""

from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request, status
from fastapi.responses import JSONResponse
from starlette.responses import Response

from app.admin.batches import BatchNotFound
from app.deadletters.errors import DeadLetterNotFound, DiscardRefused
from app.errors import BatchRefused, ServiceUnavailable, UsageError
from app.tenancy.limits import LimitExceeded

HtmlError = Callable[[Request, int, str], Awaitable[Response]]

# Most specific first: the first class an error is an instance of decides the status.
STATUS_OF: tuple[tuple[type[Exception], int], ...] = (
    (DeadLetterNotFound, status.HTTP_404_NOT_FOUND),
    (BatchNotFound, status.HTTP_404_NOT_FOUND),
    (DiscardRefused, status.HTTP_409_CONFLICT),
    (LimitExceeded, status.HTTP_429_TOO_MANY_REQUESTS),
    (BatchRefused, status.HTTP_422_UNPROCESSABLE_CONTENT),
    (UsageError, status.HTTP_422_UNPROCESSABLE_CONTENT),
    (ServiceUnavailable, status.HTTP_503_SERVICE_UNAVAILABLE),
)


def status_of(exc: Exception) -> int:
    return next((code for kind, code in STATUS_OF if isinstance(exc, kind)), status.HTTP_500_INTERNAL_SERVER_ERROR)


def install_error_handlers(app: FastAPI, html_error: HtmlError) -> None:
    async def handle(request: Request, exc: Exception) -> Response:
        code, message = status_of(exc), str(exc)
        if isinstance(exc, DeadLetterNotFound):
            message = message.split(";")[0]  # the service's hint names a CLI command
        if request.url.path.startswith("/console"):
            return await html_error(request, code, message)
        headers = {"Retry-After": str(exc.retry_after)} if isinstance(exc, LimitExceeded) else None
        return JSONResponse({"detail": message}, status_code=code, headers=headers)

    for kind in (UsageError, ServiceUnavailable):
        app.add_exception_handler(kind, handle)

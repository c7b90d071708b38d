"""The admin app: the JSON API under /v1, the DLQ console under /console, and /healthz.

`create_admin_app(settings)` is the factory; its lifespan owns the database engine and the AMQP connection
replays are published on (as the service's own login, like the relay).
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request, status
from fastapi.exception_handlers import http_exception_handler
from fastapi.responses import RedirectResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from app.admin import api_batches, api_dead_letters, api_tenants, api_workers
from app.admin.config import AdminSettings
from app.admin.console import actions, login, pages, workers
from app.admin.console.context import LoginRequired
from app.admin.console.render import page
from app.admin.errors import install_error_handlers
from app.admin.services import running_services
from app.logs import configure_logging
from app.settings import Settings

DESCRIPTION = (
    "Dead-letter review and replay, bulk batch ingress and batch status. Authenticate with an API key "
    "(`Authorization: Bearer rk_...` or `X-API-Key`); a tenant key sees and acts only for its tenant, an "
    "admin key for all. The DLQ console is at /console."
)
TITLES = {403: "Not allowed", 404: "Not found", 409: "Not possible now", 422: "Cannot do that"}


def create_admin_app(settings: Settings, admin: AdminSettings | None = None) -> FastAPI:
    admin = admin or AdminSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        configure_logging()
        async with running_services(settings, admin) as services:
            app.state.services = services
            yield

    app = FastAPI(title="remit admin API", version="1.0.0", description=DESCRIPTION, lifespan=lifespan)
    for module in (api_dead_letters, api_batches, api_workers, api_tenants, login, pages, actions, workers):
        app.include_router(module.router)
    install_error_handlers(app, console_error)
    app.add_exception_handler(LoginRequired, _to_login)
    app.add_exception_handler(StarletteHTTPException, _http_error)

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        """The process is alive."""
        return {"status": "alive"}

    return app


async def console_error(request: Request, status_code: int, message: str) -> Response:
    title = TITLES.get(status_code, "Something went wrong")
    return page(request, "error.html", None, status_code, title=title, message=message, code=status_code)


async def _to_login(request: Request, exc: Exception) -> Response:
    return RedirectResponse("/console/login", status.HTTP_303_SEE_OTHER)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, StarletteHTTPException)
    if request.url.path.startswith("/console"):
        return await console_error(request, exc.status_code, str(exc.detail))
    return await http_exception_handler(request, exc)

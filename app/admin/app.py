"""The admin app: the JSON API under /v1, the console under /console, and /healthz.

`create_admin_app(settings)` is the factory; its lifespan holds what app/bootstrap.py builds for it (the
database roles, the AMQP connection replays are published on, tenant administration, console sessions).
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Request, status
from fastapi.responses import RedirectResponse
from fastapi_offline import FastAPIOffline
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.responses import Response

from app.admin import api_batches, api_dead_letters, api_payments, api_tenants, api_workers
from app.admin.body_limit import BodyLimit, BodyLimits
from app.admin.brake import AuthBrake
from app.admin.console import actions, batches, login, pages, queues, reconciliation, trace, workers
from app.admin.console.context import LoginRequired
from app.admin.console.render import page
from app.admin.edge import Edge
from app.admin.errors import install_error_handlers
from app.admin.openapi import known_query_only, openapi_document
from app.bootstrap import Ports, running_admin
from app.logs import configure_logging
from app.observability.admin_metrics import AdminMetrics
from app.settings import Settings

DESCRIPTION = (
    "Dead-letter review and replay, bulk batch ingress and batch status, and where a payment is (its trace). "
    "Authenticate with an API key (`Authorization: Bearer rk_...` or `X-API-Key`); a tenant key sees and acts "
    "only for its tenant, an admin key for all. Every error is RFC 9457 problem details "
    "(`application/problem+json`, the `Problem` schema): `code` tells the kind, `detail` what to change, `errors` "
    "each invalid input. The console is at /console."
)
DOCS_STATIC = "/static/docs"
TITLES = {403: "Not allowed", 404: "Not found", 409: "Not possible now", 422: "Cannot do that"}


def create_admin_app(settings: Settings, ports: Ports | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        configure_logging(settings.log_level, settings.log_format)
        async with running_admin(settings, ports or Ports()) as services:
            app.state.services = services
            yield

    # Swagger UI (/docs) and ReDoc (/redoc) from files the fastapi-offline package ships, served under
    # /static/docs: the page works on a network without a CDN.
    app = FastAPIOffline(
        title="remit admin API",
        version="1.0.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        static_url=DOCS_STATIC,
    )
    app.openapi = lambda: openapi_document(app)  # type: ignore[method-assign]
    edge = Edge(AdminMetrics(), AuthBrake(settings))
    app.state.edge = edge
    # Added last, so it wraps every other middleware and route: a body is bounded before anything reads it.
    limits = BodyLimits(request=settings.admin_max_request_bytes, upload_file=settings.admin_max_upload_bytes)
    app.add_middleware(BodyLimit, limits=limits, on_refusal=edge.body_refused)
    for api in (api_dead_letters, api_batches, api_payments, api_workers, api_tenants):
        app.include_router(api.router, dependencies=[Depends(known_query_only)])
    for console in (login, pages, actions, workers, batches, trace, reconciliation, queues):
        app.include_router(console.router)
    install_error_handlers(app, console_error)
    app.add_exception_handler(LoginRequired, _to_login)

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        """The process is alive."""
        return {"status": "alive"}

    # Like the consumer's: no key (a scraper has none), and nothing in it names a tenant, a key or an address.
    @app.get("/metrics", include_in_schema=False)
    async def metrics() -> Response:
        return Response(generate_latest(edge.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return app


async def console_error(request: Request, status_code: int, message: str) -> Response:
    title = TITLES.get(status_code, "Something went wrong")
    return page(request, "error.html", None, status_code, title=title, message=message, code=status_code)


async def _to_login(request: Request, exc: Exception) -> Response:
    return RedirectResponse("/console/login", status.HTTP_303_SEE_OTHER)

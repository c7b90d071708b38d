"""The core's ASGI application: `create_app` builds the FastAPI app (its lifespan owns the database engine);
`asgi_app` adds what runs outside it (quiet error logging, fault injection when enabled)."""

import logging
import traceback
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from sqlalchemy.ext.asyncio import create_async_engine
from starlette.types import ASGIApp, Receive, Scope, Send

from corebank.api import accounts, journal, operations, transfers
from corebank.api.database import Database
from corebank.api.deps import client
from corebank.api.errors import declared, install_error_handlers, route_of
from corebank.api.fault_injection import FaultInjection
from corebank.auth import ClientTokens, credentials_for
from corebank.faults import Faults
from corebank.settings import CoreBankSettings

log = logging.getLogger("corebank")

DESCRIPTION = (
    "The reference core-banking service remit books payments in: accounts with balances per currency, "
    "idempotent transfers (one `Idempotency-Key` per transfer), an append-only journal and its export. "
    "Refusals are results, not errors. Every error has the `ErrorBody` shape. Every route but /healthz and "
    "/readyz needs a client's bearer token. Contract: docs/core-banking.md."
)


def create_app(settings: CoreBankSettings, faults: Faults, client_tokens: ClientTokens | None = None) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = create_async_engine(
            settings.database_url,
            pool_size=settings.pool_size,
            max_overflow=0,
            # No ping per checkout: it is one more round trip in every request. A connection that died (the
            # database restarted) fails its request's first statement before anything is written, SQLAlchemy
            # then discards every older pooled connection, and the client's retry gets a fresh one.
            pool_pre_ping=False,
            hide_parameters=True,  # errors and logs never carry account numbers
        )
        app.state.database = Database(engine)
        yield
        await engine.dispose()

    app = FastAPI(title="remit reference core banking", version="1.0.0", description=DESCRIPTION, lifespan=lifespan)
    app.state.settings = settings
    app.state.faults = faults
    app.state.client_tokens = client_tokens or ClientTokens()  # none: every request is refused
    # The API is for its clients only; fault injection exists only where it was enabled, behind its own token.
    for module in (transfers, accounts, journal):
        app.include_router(module.router, dependencies=[Depends(client)], responses=declared(401))
    app.include_router(operations.router)
    if faults.enabled:
        app.include_router(operations.faults_router)
    install_error_handlers(app)
    return app


def asgi_app(settings: CoreBankSettings) -> ASGIApp:
    """The app `serve` runs; BadCredentials unless it has a client's token (and a faults token for faults)."""
    faults = Faults(enabled=settings.faults_enabled)
    app: ASGIApp = create_app(settings, faults, credentials_for(settings))
    if faults.enabled:
        app = FaultInjection(app, faults)
    return QuietErrors(app)


class QuietErrors:
    """Logs an unexpected exception by class and frames only: its message may quote data (account numbers).
    The client already has its 500 answer from the app's handler."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        except Exception as exc:
            frames = "".join(traceback.format_tb(exc.__traceback__))
            log.error("unexpected %s on %s\n%s", type(exc).__name__, route_of(scope), frames)

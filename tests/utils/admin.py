"""Test helpers for the admin app: an in-process client (ASGI transport, lifespan run), API keys,
dead letters stored like the archiver stores them, and the admin app as a real uvicorn process."""

import re
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from app.admin.api_keys import create_api_key
from app.admin.app import create_admin_app
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.dead_letters import archive_as_consumer
from tests.utils.factories import make_wire_dict
from tests.utils.services import ServiceProcess, eventually, free_port
from tests.utils.world import fresh_tenant


@asynccontextmanager
async def admin_client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """The admin app in this process, its lifespan running (database engine, AMQP connection)."""
    app = create_admin_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://admin.test") as client:
            yield client


async def tenant_key(uow: UnitOfWorkFactory, tenant: str, label: str | None = None) -> str:
    return (await create_api_key(uow, tenant, label or f"{tenant} ops")).key


async def admin_key(uow: UnitOfWorkFactory, label: str = "operator") -> str:
    return (await create_api_key(uow, None, label)).key


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def hidden(html: str, name: str) -> str:
    """The value of a hidden form field (the console's login and CSRF tokens)."""
    match = re.search(rf'name="{name}" value="([^"]*)"', html)
    assert match is not None, name
    return match.group(1)


async def log_in(client: httpx.AsyncClient, key: str) -> httpx.Response:
    """Log in to the console with an API key, as a person does through the login form."""
    form = await client.get("/console/login")
    return await client.post("/console/login", data={"api_key": key, "login_token": hidden(form.text, "login_token")})


async def seed_dead_letter(
    uow: UnitOfWorkFactory, tenant: str, reason: str = "retries_exhausted", **overrides: Any
) -> tuple[int, dict[str, Any]]:
    """A consumer-style dead letter of a valid payment for `tenant`; (its id, the payment's wire dict)."""
    wire = make_wire_dict(tenant_id=tenant, retry_count=3, **overrides)
    return await archive_as_consumer(uow, wire, reason), wire


async def two_tenants_with_a_dead_letter_each(
    uow: UnitOfWorkFactory,
) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """Tenants a and b, each with one retries_exhausted dead letter: (a, b, a's payment, b's payment)."""
    a, b = await fresh_tenant(uow), await fresh_tenant(uow)
    _, mine = await seed_dead_letter(uow, a)
    _, theirs = await seed_dead_letter(uow, b)
    return a, b, mine, theirs


def start_admin(env: Mapping[str, str], log_path: Path) -> ServiceProcess:
    """`python -m app.admin` (what `remit admin` runs) as a real process on a free port."""
    port = free_port()
    process = ServiceProcess([sys.executable, "-m", "app.admin", "--port", str(port)], env, log_path)
    process.port = port
    return process


async def wait_healthy(base_url: str, timeout: float = 30) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=2) as client:

        async def alive() -> bool:
            try:
                return (await client.get("/healthz")).status_code == 200
            except httpx.TransportError:
                return False

        await eventually(alive, timeout=timeout, poll=0.2)

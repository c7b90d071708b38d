"""API keys on the admin API: what authenticates, what does not, and what is stored."""

import asyncio
import hashlib
import re
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import typer
from sqlalchemy import select
from typer.testing import CliRunner

from app.admin.api_keys import create_api_key, revoke_api_key
from app.cli.apikeys import apikeys_app
from app.errors import UsageError
from app.resources import build_database
from app.settings import Settings, get_settings
from app.storage.tables import api_keys
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import admin_client, bearer, tenant_key
from tests.utils.world import fresh_tenant

pytestmark = pytest.mark.integration


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_client(settings) as c:
        yield c


async def test_missing_malformed_unknown_wrong_and_revoked_keys_get_401(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    tenant = await fresh_tenant(uow_factory)
    new = await create_api_key(uow_factory, tenant, "ops")
    wrong_secret = f"rk_{new.key_id}_{'x' * 43}"
    for headers in (
        {},
        {"Authorization": "Bearer"},
        {"Authorization": f"Basic {new.key}"},
        bearer("not-a-key"),
        bearer(f"rk_000000000000_{'y' * 43}"),
        bearer(wrong_secret),
        {"X-API-Key": wrong_secret},
    ):
        response = await client.get("/v1/dead-letters", headers=headers)
        assert response.status_code == 401, headers
        assert response.headers["www-authenticate"].startswith("Bearer")

    assert (await client.get("/v1/dead-letters", headers=bearer(new.key))).status_code == 200
    assert (await client.get("/v1/dead-letters", headers={"X-API-Key": new.key})).status_code == 200

    assert await revoke_api_key(uow_factory, new.key_id)
    assert not await revoke_api_key(uow_factory, new.key_id)  # revoking twice is harmless
    assert (await client.get("/v1/dead-letters", headers=bearer(new.key))).status_code == 401
    assert (await client.post("/v1/batches", headers=bearer(new.key), content=b"x")).status_code == 401


async def test_only_the_hash_of_the_secret_is_stored(uow_factory: UnitOfWorkFactory) -> None:
    tenant = await fresh_tenant(uow_factory)
    new = await create_api_key(uow_factory, tenant, "ops")
    prefix, key_id, secret = new.key.split("_", 2)
    assert (prefix, key_id) == ("rk", new.key_id)
    assert len(secret) >= 43  # 256 random bits
    async with uow_factory() as uow:
        row = (await uow.connection.execute(select(api_keys).where(api_keys.c.key_id == key_id))).one()
    assert row.key_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert (row.tenant_id, row.role, row.label, row.revoked_at) == (tenant, "tenant", "ops", None)
    assert not any(secret in str(value) for value in row)


async def test_health_needs_no_key(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "alive"}


async def test_admin_keys_cannot_submit_batches(client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory) -> None:
    admin = await create_api_key(uow_factory, None, "operator")
    response = await client.post(
        "/v1/batches", headers={**bearer(admin.key), "Content-Type": "text/csv"}, content=b"payment_reference\n"
    )
    assert response.status_code == 403
    assert "tenant's own API key" in response.json()["detail"]


async def test_a_key_for_an_unknown_tenant_is_refused(uow_factory: UnitOfWorkFactory) -> None:
    with pytest.raises(UsageError, match="unknown tenant"):
        await create_api_key(uow_factory, "no-such-tenant", None)


async def test_unmasking_is_for_admins_only(client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory) -> None:
    tenant = await fresh_tenant(uow_factory)
    key = await tenant_key(uow_factory, tenant)
    response = await client.get("/v1/dead-letters/1?unmask=true", headers=bearer(key))
    assert response.status_code == 403


cli = typer.Typer()
cli.add_typer(apikeys_app, name="apikeys")


@pytest.fixture
def cli_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("REMIT_DATABASE_URL", settings.database_url)
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_apikeys_cli_creates_lists_and_revokes(cli_env: None, uow_factory: UnitOfWorkFactory) -> None:
    runner = CliRunner()
    tenant = asyncio.run(_tenant_in_own_loop())
    created = runner.invoke(cli, ["apikeys", "create", "--tenant", tenant, "--label", "anz console"])
    assert created.exit_code == 0, created.output
    key = re.search(r"rk_[0-9a-f]{12}_\S+", created.stdout)
    assert key is not None
    key_id = key.group().split("_")[1]

    listed = runner.invoke(cli, ["apikeys", "list", "--tenant", tenant, "--json"])
    assert listed.exit_code == 0, listed.output
    assert key.group().split("_", 2)[2] not in listed.stdout  # never the secret
    assert key_id in listed.stdout
    assert "anz console" in listed.stdout

    assert runner.invoke(cli, ["apikeys", "revoke", key_id]).stdout.strip() == f"API key {key_id} revoked"
    assert '"revoked_at": null' not in runner.invoke(cli, ["apikeys", "list", "--tenant", tenant, "--json"]).stdout

    both = runner.invoke(cli, ["apikeys", "create", "--tenant", tenant, "--admin"])
    assert both.exit_code == 2
    assert "exactly one of --tenant T or --admin" in both.output


async def _tenant_in_own_loop() -> str:
    """The CLI runs its own event loop, so this test makes its tenant on a short-lived engine too."""
    database = build_database(get_settings(), pool_size=1)
    try:
        return await fresh_tenant(database.uow)
    finally:
        await database.dispose()

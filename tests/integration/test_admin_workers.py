"""Worker pools and tenants over the admin API: a tenant key sees only its own tier's pools and cannot act;
an admin key sees every tier, stops and starts pools (the consumer process follows), and runs tenants."""

from collections.abc import AsyncIterator

import httpx
import pytest

from app.messaging.connection import vhost_of
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.broker_users import broker_user
from app.tenancy.pool_operations import set_desired_state
from tests.utils.admin import admin_client, admin_key, bearer, tenant_key
from tests.utils.services import MANAGEMENT_AUTH, MANAGEMENT_URL, ServiceProcess, eventually, unique
from tests.utils.world import fresh_tenant

pytestmark = pytest.mark.integration

TIERS = {"free", "basic", "premium", "enterprise"}


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_client(settings) as c:
        yield c


async def _pools(client: httpx.AsyncClient, key: str) -> dict[str, dict[str, object]]:
    response = await client.get("/admin/workers/status", headers=bearer(key))
    assert response.status_code == 200, response.text
    return {p["pool"]: p for p in response.json()["pools"]}


async def test_a_tenant_key_sees_only_its_tier_and_an_admin_key_sees_all(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, settings: Settings
) -> None:
    tenant = await fresh_tenant(uow_factory, tier="premium")
    key, admin = await tenant_key(uow_factory, tenant), await admin_key(uow_factory)

    response = await client.get("/admin/workers/status", headers=bearer(key))
    assert response.status_code == 200
    body = response.json()
    assert body["tenant_id"] == tenant
    assert [p["pool"] for p in body["pools"]] == ["premium"]
    assert body["pools"][0]["queue"] == "payments.work.premium"
    assert {"desired_state", "running", "workers", "processes", "messages", "unacknowledged"} <= set(body["pools"][0])

    everything = await _pools(client, admin)
    assert set(everything) >= TIERS
    assert {p["queue"] for p in everything.values()} >= {f"payments.work.{t}" for t in TIERS}
    assert (await client.get("/admin/workers/status")).status_code == 401


async def test_tenant_keys_cannot_control_pools_or_tenants(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    tenant = await fresh_tenant(uow_factory)
    headers = bearer(await tenant_key(uow_factory, tenant))
    for action in ("start", "stop", "restart"):
        response = await client.post("/admin/workers/action", headers=headers, json={"action": action, "tier": "basic"})
        assert response.status_code == 403, action
    for method, path, body in (
        ("GET", "/admin/tenants", None),
        ("GET", f"/admin/tenants/{tenant}", None),
        ("POST", "/admin/tenants", {"tenant_id": unique("t"), "name": "Mallory"}),
        ("POST", f"/admin/tenants/{tenant}/tier", {"tier": "enterprise"}),
        ("POST", f"/admin/tenants/{tenant}/suspend", None),
        ("POST", f"/admin/tenants/{tenant}/resume", None),
        ("POST", f"/admin/tenants/{tenant}/limits", {"max_in_flight": 10}),
    ):
        response = await client.request(method, path, headers=headers, json=body)
        assert response.status_code == 403, (method, path)
    admin = bearer(await admin_key(uow_factory))
    shown = (await client.get(f"/admin/tenants/{tenant}", headers=admin)).json()
    assert (shown["tier"], shown["status"], shown["max_in_flight"]) == ("basic", "active", 100_000)  # unchanged


async def test_admin_manages_tenants(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, settings: Settings
) -> None:
    headers = bearer(await admin_key(uow_factory))
    tenant = unique("t")
    try:
        response = await client.post(
            "/admin/tenants", headers=headers, json={"tenant_id": tenant, "name": "Acme", "tier": "premium"}
        )
        assert response.status_code == 201, response.text
        added = response.json()
        assert added["created"] is True
        assert (added["tenant"]["tier"], added["tenant"]["status"]) == ("premium", "active")
        assert added["credentials"]["user"] == broker_user(tenant, vhost_of(settings.amqp_url))
        assert len(added["credentials"]["password"]) >= 16

        again = await client.post("/admin/tenants", headers=headers, json={"tenant_id": tenant, "name": "Acme"})
        assert again.status_code == 200
        assert (again.json()["created"], again.json()["credentials"]) == (False, None)  # the password is shown once

        listed = (await client.get("/admin/tenants", headers=headers)).json()
        assert tenant in {t["tenant_id"] for t in listed}

        moved = await client.post(f"/admin/tenants/{tenant}/tier", headers=headers, json={"tier": "enterprise"})
        assert moved.status_code == 200, moved.text
        assert (moved.json()["queue"], moved.json()["tenant"]["tier"]) == ("payments.work.enterprise", "enterprise")
        bad = await client.post(f"/admin/tenants/{tenant}/tier", headers=headers, json={"tier": "platinum"})
        assert bad.status_code == 422

        limits = await client.post(
            f"/admin/tenants/{tenant}/limits", headers=headers, json={"publish_rate_per_second": 500}
        )
        assert limits.status_code == 200
        assert (limits.json()["publish_rate_per_second"], limits.json()["max_in_flight"]) == (500, 100_000)

        suspended = await client.post(f"/admin/tenants/{tenant}/suspend", headers=headers)
        assert suspended.json()["status"] == "suspended"
        resumed = await client.post(f"/admin/tenants/{tenant}/resume", headers=headers)
        assert resumed.json()["status"] == "active"

        assert (await client.get(f"/admin/tenants/{tenant}", headers=headers)).json()["tier"] == "enterprise"
        missing = await client.get("/admin/tenants/no-such-tenant", headers=headers)
        assert missing.status_code == 404
        assert (await client.post("/admin/tenants/no-such-tenant/suspend", headers=headers)).status_code == 404
    finally:
        async with httpx.AsyncClient(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH) as management:
            await management.delete(f"/api/users/{broker_user(tenant, vhost_of(settings.amqp_url))}")


async def test_admin_stop_and_start_a_tier_and_the_consumer_follows(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, settings: Settings, consumer: ServiceProcess
) -> None:
    key = await admin_key(uow_factory)
    headers = bearer(key)
    size = settings.tier_workers["free"]

    async def free() -> dict[str, object]:
        return (await _pools(client, key))["free"]

    async def running(n: int) -> bool:
        pool = await free()
        return bool(pool["processes"]) and pool["running"] == n

    try:
        await eventually(lambda: running(size), timeout=30, poll=0.5)

        response = await client.post("/admin/workers/action", headers=headers, json={"action": "stop", "tier": "free"})
        assert response.status_code == 200, response.text
        assert response.json()["tiers"] == ["free"]
        assert (await free())["desired_state"] == "stopped"
        await eventually(lambda: running(0), timeout=30, poll=0.5)  # stale heartbeats age out within 15 s
        assert (await _pools(client, key))["basic"]["desired_state"] == "running"

        response = await client.post("/admin/workers/action", headers=headers, json={"action": "start", "tier": "free"})
        assert response.status_code == 200
        assert (await free())["desired_state"] == "running"
        await eventually(lambda: running(size), timeout=30, poll=0.5)

        bad = await client.post("/admin/workers/action", headers=headers, json={"action": "pause", "tier": "free"})
        assert bad.status_code == 422
        bad = await client.post("/admin/workers/action", headers=headers, json={"action": "stop", "tier": "gold"})
        assert bad.status_code == 422
    finally:
        await set_desired_state(uow_factory, ["free"], "running", "test cleanup")  # the database is shared

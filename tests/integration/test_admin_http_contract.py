"""The admin API's HTTP contract, case by case (Schemathesis explores it wholesale in tests/contract): every
error is one problem+json shape; numbers beyond the database columns, `true` for a number, unknown query
parameters and wrong methods are 4xx in that shape, never 500; messages name request fields, not CLI flags;
the /docs page needs nothing but remit itself."""

import re
from collections.abc import AsyncIterator
from html.parser import HTMLParser
from typing import Any, get_args

import httpx
import pytest

from app.admin.api_workers import Tier
from app.admin.app import create_admin_app
from app.messaging.topology import TIERS
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import admin_client, admin_key, bearer, seed_dead_letter, tenant_key
from tests.utils.world import fresh_tenant, payment_row, write_csv

pytestmark = pytest.mark.integration

INT32_MAX = 2_147_483_647
BIGINT_MAX = 9_223_372_036_854_775_807
PROBLEM_KEYS = {"type", "title", "status", "code", "detail", "errors"}


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_client(settings) as c:
        yield c


def problem(response: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert set(body) == PROBLEM_KEYS, body
    assert body["status"] == status
    assert body["type"] == "about:blank"
    assert body["detail"]
    if code is not None:
        assert body["code"] == code, body
    return body


async def test_limits_beyond_the_database_columns_and_booleans_are_422(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    tenant = await fresh_tenant(uow_factory)
    admin = bearer(await admin_key(uow_factory))
    path = f"/admin/tenants/{tenant}/limits"
    for field in ("publish_rate_per_second", "publish_bytes_per_second", "max_in_flight", "default_ttl_seconds"):
        body = problem(await client.post(path, headers=admin, json={field: INT32_MAX + 1}), 422, "invalid_request")
        assert body["errors"][0]["location"] == ["body", field]
        assert "2147483647" in body["errors"][0]["message"]
        problem(await client.post(path, headers=admin, json={field: True}), 422, "invalid_request")
        problem(await client.post(path, headers=admin, json={field: "5"}), 422, "invalid_request")
    largest = await client.post(path, headers=admin, json={"max_in_flight": INT32_MAX})
    assert largest.status_code == 200
    assert largest.json()["max_in_flight"] == INT32_MAX
    unchanged = (await client.get(f"/admin/tenants/{tenant}", headers=admin)).json()
    assert unchanged["publish_rate_per_second"] != 1  # `true` was never stored as 1

    new = {"tenant_id": f"{tenant}x", "name": "n", "default_ttl_seconds": INT32_MAX + 1}
    problem(await client.post("/admin/tenants", headers=admin, json=new), 422, "invalid_request")
    problem(await client.post("/admin/tenants", headers=admin, json={**new, "tier": "gold"}), 422)
    problem(await client.post("/admin/tenants", headers=admin, json={"tenant_id": "Bad Id!", "name": "n"}), 422)
    problem(await client.get("/admin/tenants/Bad%20Id!", headers=admin), 422, "invalid_request")


async def test_dead_letter_ids_beyond_bigint_are_422_everywhere(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    tenant = await fresh_tenant(uow_factory)
    key = bearer(await tenant_key(uow_factory, tenant))
    too_big = BIGINT_MAX + 1
    problem(await client.get(f"/v1/dead-letters/{too_big}", headers=key), 422, "invalid_request")
    problem(await client.post(f"/v1/dead-letters/{too_big}/discard", headers=key, json={"reason": "x"}), 422)
    problem(await client.post("/v1/dead-letters/replay", headers=key, json={"ids": [too_big]}), 422)
    problem(await client.post("/v1/dead-letters/replay", headers=key, json={"ids": [True]}), 422)
    problem(await client.get(f"/v1/dead-letters/audit?id={too_big}", headers=key), 422, "invalid_request")
    problem(await client.get(f"/v1/dead-letters/{BIGINT_MAX}", headers=key), 404, "dead_letter_not_found")


async def test_wrong_methods_are_405_with_every_allowed_method(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    key = bearer(await admin_key(uow_factory))
    replay = problem(await client.get("/v1/dead-letters/replay", headers=key), 405, "method_not_allowed")
    assert replay["detail"] == "GET is not allowed on /v1/dead-letters/replay: use POST"
    cases = {
        "/v1/dead-letters/replay": "POST",
        "/admin/tenants": "GET, POST",
        "/v1/batches": "GET, POST",
        "/v1/dead-letters/5": "GET",
        "/admin/workers/action": "POST",
    }
    for path, allow in cases.items():
        response = await client.put(path, headers=key)
        problem(response, 405, "method_not_allowed")
        assert response.headers["allow"] == allow, path
    assert (await client.delete("/admin/tenants")).headers["allow"] == "GET, POST"


async def test_unknown_query_parameters_such_as_offset_are_refused(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    key = bearer(await tenant_key(uow_factory, await fresh_tenant(uow_factory)))
    for path in ("/v1/dead-letters", "/v1/dead-letters/audit", "/v1/batches"):
        body = problem(await client.get(f"{path}?limit=5&offset=10", headers=key), 422, "invalid_request")
        assert body["errors"][0]["location"] == ["query", "offset"]
        assert "limit" in body["errors"][0]["message"]  # it names what the route takes
    typo = problem(await client.get("/v1/dead-letters?staus=open", headers=key), 422)
    assert "status" in typo["detail"]


async def test_choices_and_formats_outside_the_schema_are_422(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    key = bearer(await tenant_key(uow_factory, await fresh_tenant(uow_factory)))
    for query in ("status=active", "reason=misspelt", "currency=aud", "since=yesterday", "since=99999999d"):
        body = problem(await client.get(f"/v1/dead-letters?{query}", headers=key), 422, "invalid_request")
        assert body["errors"][0]["location"][:1] == ["query"], query
    assert (
        "open, replayed, resolved, discarded, already_processed, all"
        in (await client.get("/v1/dead-letters?status=active", headers=key)).json()["detail"]
    )
    for query in ("since=30m", "since=2025-05-01T09:00Z", "until=2025-05-01", "reason=expired", "status=all"):
        assert (await client.get(f"/v1/dead-letters?{query}", headers=key)).status_code == 200, query


async def test_routing_auth_and_remit_errors_share_the_shape(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    tenant = await fresh_tenant(uow_factory)
    key = bearer(await tenant_key(uow_factory, tenant))
    problem(await client.get("/v1/no-such-route", headers=key), 404, "not_found")
    missing = await client.get("/v1/dead-letters")
    assert problem(missing, 401, "unauthorized")["detail"] == "an API key is required"
    assert missing.headers["www-authenticate"].startswith("Bearer")
    problem(await client.get("/admin/tenants", headers=key), 403, "forbidden")
    problem(await client.get("/v1/batches/no-such-batch", headers=key), 404, "batch_not_found")
    wrong_type = {**key, "content-type": "application/json"}
    problem(await client.post("/v1/batches", headers=wrong_type, content=b"{}"), 415, "unsupported_media_type")
    csv = {**key, "content-type": "text/csv"}
    unknown = problem(await client.post("/v1/batches?format=mt940", headers=csv, content=b"x"), 422, "usage_error")
    assert "csv, jsonl" in unknown["detail"]


async def test_an_upload_over_the_limit_is_413_in_the_shape(settings: Settings, uow_factory: UnitOfWorkFactory) -> None:
    key = {**bearer(await tenant_key(uow_factory, await fresh_tenant(uow_factory))), "content-type": "text/csv"}
    async with admin_client(settings.model_copy(update={"admin_max_upload_bytes": 1024})) as client:
        body = problem(await client.post("/v1/batches", headers=key, content=b"x" * 2048), 413, "content_too_large")
    assert body["detail"] == "the file is larger than 1024 bytes"


async def test_a_command_over_the_body_limit_and_the_brakes_refusal_are_in_the_shape(
    settings: Settings, uow_factory: UnitOfWorkFactory
) -> None:
    key = bearer(await tenant_key(uow_factory, await fresh_tenant(uow_factory)))
    small = settings.model_copy(update={"admin_max_request_bytes": 1024, "admin_auth_source_failures": 1})
    async with admin_client(small) as client:
        too_large = await client.post("/v1/dead-letters/replay", headers=key, json={"ids": [1], "why": "x" * 1024})
        body = problem(too_large, 413, "content_too_large")
        assert body["detail"] == "the request body is larger than 1024 bytes, the most this route takes"
        assert too_large.headers["connection"] == "close"
        problem(await client.get("/v1/batches", headers=bearer("rk_000000000000_wrong")), 401, "unauthorized")
        held = problem(await client.get("/v1/batches", headers=bearer("rk_000000000000_wrong")), 429)
        assert held["code"] == "too_many_requests"
        assert held["detail"] == "too many failed authentications from this address: try again in 6 s"
        assert (await client.get("/v1/batches", headers=key)).status_code == 200


async def test_messages_name_request_fields_not_cli_flags(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Any
) -> None:
    tenant = await fresh_tenant(uow_factory)
    key = {**bearer(await tenant_key(uow_factory, tenant)), "content-type": "text/csv"}
    csv = write_csv(tmp_path / "again.csv", [payment_row(1)]).read_bytes()
    assert (await client.post("/v1/batches?filename=again.csv", headers=key, content=csv)).status_code == 201
    again = problem(await client.post("/v1/batches?filename=again.csv", headers=key, content=csv), 422, "batch_refused")
    assert "allow_resubmit=true" in again["detail"]
    assert "--" not in again["detail"]

    dead, _ = await seed_dead_letter(uow_factory, tenant)
    auth = bearer(await tenant_key(uow_factory, tenant))
    assert (
        await client.post(f"/v1/dead-letters/{dead}/discard", headers=auth, json={"reason": "paid"})
    ).status_code == 200
    twice = problem(await client.post(f"/v1/dead-letters/{dead}/discard", headers=auth, json={"reason": "paid"}), 409)
    assert twice["code"] == "discard_refused"
    assert f"GET /v1/dead-letters/{dead}" in twice["detail"]
    assert "remit" not in twice["detail"]
    problem(await client.post(f"/v1/dead-letters/{dead}/discard", headers=auth, json={"reason": "   "}), 422)


async def test_an_unexpected_failure_is_500_in_the_shape_with_nothing_of_its_cause(settings: Settings) -> None:
    app = create_admin_app(settings)

    @app.get("/v1/boom")
    async def boom() -> None:
        raise RuntimeError('relation "secret_table" does not exist at /srv/app.py line 3')

    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://admin.test") as client:
        body = problem(await client.get("/v1/boom"), 500, "internal_error")
    assert "secret_table" not in str(body)
    assert "Traceback" not in str(body)
    assert ".py" not in str(body)


class _Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value for name, value in attrs if name in ("src", "href") and value]


async def test_the_docs_page_is_served_by_remit_alone(client: httpx.AsyncClient) -> None:
    for page in ("/docs", "/redoc"):
        html = (await client.get(page)).text
        parser = _Assets()
        parser.feed(html)
        urls = parser.urls + re.findall(r"""url: ?['"]([^'"]+)['"]""", html)
        assert urls, page
        assert "/openapi.json" in html
        assert not re.search(r"https?://", html), page  # no CDN, no font service, nothing outside
        for url in urls:
            assert url.startswith("/"), url
            assert (await client.get(url)).status_code == 200, url
    assert (await client.get("/openapi.json")).json()["info"]["title"] == "remit admin API"


async def test_openapi_declares_statuses_shapes_and_limits(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    for path, operations in document["paths"].items():
        if path == "/healthz":
            continue
        for method, operation in operations.items():
            responses = operation["responses"]
            assert {"401", "422", "429", "500", "503"} <= set(responses), (method, path)
            if "requestBody" in operation:  # a route that reads a body may find it over the limit
                assert "413" in responses, (method, path)
            for status, response in responses.items():
                if int(status) >= 400:
                    assert list(response["content"]) == ["application/problem+json"], (method, path, status)
                    assert response["content"]["application/problem+json"]["schema"]["$ref"].endswith("/Problem")
    paths = document["paths"]
    assert set(paths["/admin/tenants"]["post"]["responses"]) >= {"200", "201", "403", "409"}
    assert set(paths["/v1/batches"]["post"]["responses"]) >= {"403", "413", "415", "429"}
    assert set(paths["/v1/dead-letters/{dead_letter_id}/discard"]["post"]["responses"]) >= {"404", "409"}
    schemas = document["components"]["schemas"]
    limits = schemas["LimitsBody"]["properties"]["max_in_flight"]["anyOf"][0]
    assert limits == {"type": "integer", "minimum": 1, "maximum": INT32_MAX}
    dead_letter_id = next(
        p for p in paths["/v1/dead-letters/{dead_letter_id}"]["get"]["parameters"] if p["in"] == "path"
    )
    assert dead_letter_id["schema"]["maximum"] == BIGINT_MAX
    assert schemas["TierBody"]["properties"]["tier"]["enum"] == ["free", "basic", "premium", "enterprise"]
    assert schemas["AddBody"]["properties"]["tenant_id"]["pattern"] == "^[a-z0-9][a-z0-9_-]{1,31}$"
    status = next(p for p in paths["/v1/dead-letters"]["get"]["parameters"] if p["name"] == "status")
    assert status["schema"]["enum"] == ["open", "replayed", "resolved", "discarded", "already_processed", "all"]
    assert set(document["components"]["securitySchemes"]) == {"bearer", "apiKey"}


def test_the_tier_choices_are_the_topology_tiers() -> None:
    assert get_args(Tier) == TIERS == ("free", "basic", "premium", "enterprise")

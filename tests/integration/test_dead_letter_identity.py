"""Dead letters on the real broker and store: the publisher's identity travels with every retry, oversize
bodies are kept as a bounded prefix (and never replayed), bodies nested too deep still show, and the
replay requests of the audit trail are kept apart per tenant by row-level security."""

import hashlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from aio_pika.abc import AbstractChannel
from sqlalchemy.exc import DBAPIError

from app.admin.scope import uow_for
from app.deadletters.query import DeadLetterFilter
from app.deadletters.requests import ReplayRequest, list_requests, refuse_request
from app.messaging import headers
from app.resources import uow_factory_for
from app.settings import Settings
from app.storage.engine import make_engine
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.broker_users import broker_user
from tests.utils.admin import admin_client, admin_key, bearer, tenant_key
from tests.utils.cli import remit
from tests.utils.dead_letters import (
    SERVICE_LOGIN,
    archive_as_consumer,
    consumer_headers,
    publish_dead_letter,
    start_archiver,
    wait_for_dead_letters,
)
from tests.utils.factories import make_wire_dict, to_wire_bytes
from tests.utils.services import ServiceEnv, ServiceProcess
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import attempts_for, dead_letters, fresh_tenant

pytestmark = pytest.mark.integration

LIMIT = 1024  # REMIT_DEAD_LETTER_BODY_MAX_BYTES for the archiver in these tests


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_client(settings) as c:
        yield c


async def test_a_tenants_payment_keeps_its_publisher_and_tenant_through_every_retry(
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    tenant_users: TenantUsers,
    vhost: str,
    logs_dir: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant, creditor_account="555000777")
    env = service_env.env(TEST_CORE_FLAKY_ACCOUNTS='{"555000777": 99}', REMIT_MAX_RETRIES="2")
    consumer = ServiceProcess.consumer(env, logs_dir / "consumer.log")
    try:
        await tenant_users.publisher(tenant).publish(wire)
        [dead] = await dead_letters(channel, settings, 1)
    finally:
        consumer.stop()
    # Retries travel as the service's login; the first publisher and its tenant go with them.
    assert dead.user_id == SERVICE_LOGIN
    assert dead.headers[headers.REASON] == "retries_exhausted"
    assert dead.headers[headers.PUBLISHED_BY] == broker_user(tenant, vhost)
    assert dead.headers[headers.IDENTITY_TENANT] == tenant
    assert headers.CLAIMS not in dead.headers
    attempts = await attempts_for(uow_factory, wire["message_id"])
    assert [(a.attempt, a.tenant_id) for a in attempts] == [(1, tenant), (2, tenant), (3, tenant)]


async def test_an_oversize_dead_letter_is_kept_as_a_bounded_prefix_and_never_replayed(
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    channel: AbstractChannel,
    tenant_users: TenantUsers,
    client: httpx.AsyncClient,
    logs_dir: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant)
    body = to_wire_bytes(wire) + b" " * (20 * LIMIT)  # still a valid payment: only its size is wrong
    archiver = start_archiver(service_env.env(REMIT_DEAD_LETTER_BODY_MAX_BYTES=str(LIMIT)), logs_dir / "a.log")
    try:
        # No consumer: the broker expires the tenant's own message into the dead-letter exchange.
        publisher = tenant_users.publisher(tenant)
        await publisher.publish_bytes(body, message_id=wire["message_id"], expiration=0.001)
        # The consumer cut a body already: it says what the whole was, and is believed (service login).
        said = {headers.BODY_TRUNCATED: True, headers.BODY_LENGTH: 31_457_280, headers.BODY_SHA256: "ab" * 32}
        await publish_dead_letter(channel, b'{"message_id": "', {**consumer_headers(tenant, "invalid"), **said})
        [expired, invalid] = sorted(await wait_for_dead_letters(uow_factory, tenant, 2), key=lambda r: r.reason)
    finally:
        archiver.stop()
    assert (expired.body, expired.body_length, expired.body_truncated) == (body[:LIMIT], len(body), True)
    assert expired.body_sha256 == hashlib.sha256(body).hexdigest()
    assert (invalid.body_length, invalid.body_sha256, invalid.body_truncated) == (31_457_280, "ab" * 32, True)

    as_admin = bearer(await admin_key(uow_factory))
    shown = (await client.get(f"/v1/dead-letters/{expired.dead_letter_id}", headers=as_admin)).json()
    assert (shown["body_truncated"], shown["body_length"], shown["body_kept"]) == (True, len(body), LIMIT)
    code, out = await remit(service_env.env(), "dlq", "show", str(expired.dead_letter_id))
    assert code == 0
    assert f"TRUNCATED: the first {LIMIT} of {len(body)} bytes" in " ".join(out.split())
    replay = {"ids": [invalid.dead_letter_id], "force": True}
    [outcome] = (await client.post("/v1/dead-letters/replay", headers=as_admin, json=replay)).json()["outcomes"]
    assert outcome["action"] == "refused"
    assert "it is not the payment" in outcome["detail"]


@pytest.mark.parametrize("depth", [900, 10_000])
async def test_a_body_nested_too_deep_shows_in_the_api_and_the_cli(
    depth: int, uow_factory: UnitOfWorkFactory, service_env: ServiceEnv, client: httpx.AsyncClient
) -> None:
    tenant = await fresh_tenant(uow_factory)
    deep = b"[" * depth + b'"123456789"' + b"]" * depth
    dead = await archive_as_consumer(uow_factory, make_wire_dict(tenant_id=tenant), "invalid", body=deep)

    shown = await client.get(f"/v1/dead-letters/{dead}", headers=bearer(await tenant_key(uow_factory, tenant)))
    assert shown.status_code == 200
    assert shown.json()["body_json"] is None
    assert "123456789" not in shown.json()["body_text"]
    for args in (("--json",), ()):
        code, out = await remit(service_env.env(), "dlq", "show", str(dead), *args)
        assert code == 0, out[-500:]
        assert "123456789" not in out
    code, out = await remit(service_env.env(), "dlq", "show", str(dead), "--json")
    assert json.loads(out)["body_json"] is None


async def test_replay_requests_are_kept_apart_by_row_level_security(
    settings: Settings, uow_factory: UnitOfWorkFactory
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    engine = make_engine(settings.database_url, pool_size=1)  # as the service role, bound by RLS
    try:
        app_uow = uow_factory_for(engine)
        as_a, as_b = uow_for(app_uow, a), uow_for(app_uow, b)
        await refuse_request(as_a, ReplayRequest("a ops", where=DeadLetterFilter(tenant=a)), "test")
        with pytest.raises(DBAPIError, match="row-level security"):
            await refuse_request(as_a, ReplayRequest("a ops", where=DeadLetterFilter(tenant=b)), "forged scope")
        assert [r.tenant_id for r in await list_requests(as_a)] == [a]
        assert await list_requests(as_b) == []
    finally:
        await engine.dispose()

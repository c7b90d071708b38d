"""Issue 36, item 5: guessing API keys and console logins, against `python -m app.admin` as a real process.

Failed authentication is braked per source address and per key prefix (the public `rk_<key_id>` part):
past the threshold a failure is answered 429 with Retry-After, a little late, counted in /metrics and
logged with the key id and never the secret. A right key is checked and let in whatever the counters say,
from any address, so no one else's failures lock its owner out. Other addresses than 127.0.0.1 are
other loopback addresses (127.0.0.0/8 is all local on Linux).
"""

import secrets
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from app.admin.api_keys import create_api_key, revoke_api_key
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import bearer, hidden, start_admin, tenant_key, wait_healthy
from tests.utils.services import ServiceEnv, ServiceProcess
from tests.utils.world import fresh_tenant

pytestmark = pytest.mark.integration

DEFAULTS = Settings()
PER_SOURCE = DEFAULTS.admin_auth_source_failures
PER_KEY = DEFAULTS.admin_auth_key_failures
DELAY = 0.02  # the process's refusal delay here (default 1 s), so that 300 refusals take seconds, not minutes


@pytest.fixture
def admin(service_env: ServiceEnv, logs_dir: Path) -> Iterator[ServiceProcess]:
    env = service_env.env(REMIT_ADMIN_AUTH_REFUSAL_DELAY_SECONDS=str(DELAY), REMIT_LOG_LEVEL="WARNING")
    process = start_admin(env, logs_dir / "admin.log")
    yield process
    process.stop()


@asynccontextmanager
async def client_from(admin: ServiceProcess, address: str = "127.0.0.1") -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.AsyncHTTPTransport(local_address=address)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{admin.port}", transport=transport, timeout=30) as c:
        yield c


def wrong_secret(key_id: str) -> str:
    return f"rk_{key_id}_{secrets.token_urlsafe(32)}"


def key_id_of(key: str) -> str:
    return key.split("_")[1]


def braked_after(statuses: list[int], allowed: int, seconds: float, refill: float) -> None:
    """The first `allowed` failures are 401, then 429 (a token or two may come back while the run lasts)."""
    assert statuses[:allowed] == [401] * allowed, Counter(statuses)
    assert statuses[allowed] == 429, Counter(statuses)
    assert statuses.count(401) <= allowed + int(seconds / refill) + 1, Counter(statuses)
    assert set(statuses) == {401, 429}, Counter(statuses)


async def metric(admin: ServiceProcess, reason: str, surface: str) -> float:
    """remit_admin_auth_refusals_total{surface, reason}, as the admin process's /metrics says it."""
    async with client_from(admin) as c:
        text = (await c.get("/metrics")).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "remit_admin_auth_refusals_total" and sample.labels == {"surface": surface, "reason": reason}
    )


async def test_300_wrong_secrets_for_one_key_are_braked_and_the_key_still_works(
    admin: ServiceProcess, uow_factory: UnitOfWorkFactory
) -> None:
    await wait_healthy(f"http://127.0.0.1:{admin.port}")
    key = await tenant_key(uow_factory, await fresh_tenant(uow_factory))
    guesses = [wrong_secret(key_id_of(key)) for _ in range(300)]
    statuses, slow = [], []
    started = time.monotonic()
    async with client_from(admin) as c:
        for guess in guesses:
            begun = time.monotonic()
            answer = await c.get("/v1/dead-letters", headers=bearer(guess))
            statuses.append(answer.status_code)
            if answer.status_code == 429:
                assert int(answer.headers["retry-after"]) >= 1
                assert answer.json()["code"] == "too_many_requests"
                slow.append(time.monotonic() - begun)
        the_301st = await c.get("/v1/dead-letters", headers=bearer(key))
    elapsed = time.monotonic() - started
    print(f"300 wrong secrets: {dict(Counter(statuses))}; the 301st (the right key): {the_301st.status_code}")

    braked_after(statuses, PER_KEY, elapsed, DEFAULTS.admin_auth_key_refill_seconds)
    assert min(slow) >= DELAY  # slowed, not only refused
    assert the_301st.status_code == 200  # the owner is never locked out by the guesses
    assert await metric(admin, "throttled_key", "api") == statuses.count(429)
    assert await metric(admin, "wrong_key", "api") == statuses.count(401)
    log = admin.log()
    assert f"key {key_id_of(key)}" in log
    leaked = [guess for guess in [*guesses, key] if guess.split("_", 2)[2] in log]
    assert leaked == []


async def test_wrong_keys_from_one_source_are_braked_and_a_right_key_from_it_still_works(
    admin: ServiceProcess, uow_factory: UnitOfWorkFactory
) -> None:
    """Made-up keys (unknown key ids) share nothing but their source: its brake stops them."""
    await wait_healthy(f"http://127.0.0.1:{admin.port}")
    key = await tenant_key(uow_factory, await fresh_tenant(uow_factory))
    statuses = []
    started = time.monotonic()
    async with client_from(admin, "127.0.0.2") as c:
        for _ in range(100):
            statuses.append(
                (await c.get("/v1/batches", headers=bearer(wrong_secret(secrets.token_hex(6))))).status_code
            )
        right = await c.get("/v1/batches", headers=bearer(key))
    print(f"100 made-up keys from one source: {dict(Counter(statuses))}; then the right key: {right.status_code}")
    braked_after(statuses, PER_SOURCE, time.monotonic() - started, DEFAULTS.admin_auth_source_refill_seconds)
    assert right.status_code == 200
    async with client_from(admin, "127.0.0.3") as c:  # another source is not braked by this one's failures
        assert (await c.get("/v1/batches", headers=bearer(wrong_secret(secrets.token_hex(6))))).status_code == 401
    assert await metric(admin, "throttled_source", "api") == statuses.count(429)


async def test_guesses_for_one_key_spread_over_sources_are_braked_by_its_prefix(
    admin: ServiceProcess, uow_factory: UnitOfWorkFactory
) -> None:
    await wait_healthy(f"http://127.0.0.1:{admin.port}")
    key = await tenant_key(uow_factory, await fresh_tenant(uow_factory))
    statuses = []
    started = time.monotonic()
    for n in range(40):
        async with client_from(admin, f"127.0.1.{n + 1}") as c:
            statuses.append((await c.get("/v1/batches", headers=bearer(wrong_secret(key_id_of(key))))).status_code)
    print(f"40 wrong secrets for one key, each from its own source: {dict(Counter(statuses))}")
    braked_after(statuses, PER_KEY, time.monotonic() - started, DEFAULTS.admin_auth_key_refill_seconds)
    async with client_from(admin, "127.0.1.1") as c:
        assert (await c.get("/v1/batches", headers={"X-API-Key": key})).status_code == 200


async def test_100_wrong_console_logins_are_braked_and_the_right_key_still_logs_in(
    admin: ServiceProcess, uow_factory: UnitOfWorkFactory
) -> None:
    await wait_healthy(f"http://127.0.0.1:{admin.port}")
    key = await tenant_key(uow_factory, await fresh_tenant(uow_factory))
    statuses = []
    started = time.monotonic()
    async with client_from(admin, "127.0.0.4") as c:
        token = hidden((await c.get("/console/login")).text, "login_token")
        for _ in range(100):
            answer = await c.post(
                "/console/login", data={"api_key": wrong_secret(key_id_of(key)), "login_token": token}
            )
            statuses.append(answer.status_code)
            if answer.status_code == 429:
                assert "Too many failed logins" in answer.text
                assert int(answer.headers["retry-after"]) >= 1
            token = hidden(answer.text, "login_token")
        right = await c.post("/console/login", data={"api_key": key, "login_token": token})
    print(f"100 wrong console logins: {dict(Counter(statuses))}; then the right key: {right.status_code}")
    braked_after(statuses, PER_KEY, time.monotonic() - started, DEFAULTS.admin_auth_key_refill_seconds)
    assert (right.status_code, right.headers.get("location")) == (303, "/console/dead-letters")
    assert await metric(admin, "throttled_key", "console") == statuses.count(429)


async def test_the_answers_do_not_tell_a_key_from_a_made_up_or_revoked_one(
    admin: ServiceProcess, uow_factory: UnitOfWorkFactory
) -> None:
    """A key id is braked whether or not a key has it: otherwise the 11th answer would say which ids exist."""
    await wait_healthy(f"http://127.0.0.1:{admin.port}")
    tenant = await fresh_tenant(uow_factory)
    live = key_id_of(await tenant_key(uow_factory, tenant))
    revoked = (await create_api_key(uow_factory, tenant, "old")).key_id
    await revoke_api_key(uow_factory, revoked)
    answers = {}
    for n, key_id in enumerate((live, revoked, secrets.token_hex(6))):
        async with client_from(admin, f"127.0.2.{n + 1}") as c:
            guesses = [await c.get("/v1/batches", headers=bearer(wrong_secret(key_id))) for _ in range(PER_KEY + 2)]
        answers[key_id] = [(a.status_code, a.json()["detail"]) for a in guesses]
    assert answers[live] == answers[revoked] == answers[key_id], answers
    assert [status for status, _ in answers[live]] == [401] * PER_KEY + [429, 429]

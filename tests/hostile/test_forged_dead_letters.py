"""A hostile tenant forges a dead letter for another tenant; identity, not the bytes, decides whose it is.

Tenant A publishes as its own RabbitMQ user a payment whose body and `tenantUUID` header name tenant B,
with forged `remit-*` failure headers claiming a transient failure that used up its retries. With a 1 ms
expiration the broker dead-letters it; without, the consumer quarantines it. Either way it must end as
A's dead letter (A's login published it), its forged headers kept as claims, and no replay path, whoever
asks and however forcefully, may book it in B's ledger.
"""

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.messaging import headers
from app.messaging.topology import Topology
from app.observability.metrics import Metrics
from app.observability.store_gauges import refresh
from app.resources import uow_factory_for
from app.settings import Settings
from app.storage.tables import dead_letters, delivery_attempts, processed_messages
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.broker_users import broker_user
from tests.utils.admin import admin_client, admin_key, bearer, hidden, log_in, tenant_key
from tests.utils.cli import remit
from tests.utils.dead_letters import queue_depth_now, start_archiver
from tests.utils.factories import make_wire_dict, new_correlation_id
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import fresh_tenant, ledger_rows_for_tenant

pytestmark = pytest.mark.integration

# What the attacker claims: a transient failure that used up every retry, the reason an operator replays
# in bulk after an outage.
FORGED = {
    headers.REASON: "retries_exhausted",
    headers.ERROR_TYPE: "CoreBankingTimeout",
    headers.ERROR_MESSAGE: "core banking timed out",
    headers.ATTEMPTS: 4,
}


@dataclass
class Forged:
    """One forged payment: its wire dict (naming the victim) and, once stored, its dead letter."""

    wire: dict[str, Any]
    dead_letter_id: int = 0


@dataclass
class Scene:
    attacker: str
    victim: str
    attacker_user: str
    env: dict[str, str]
    client: httpx.AsyncClient
    victim_key: str
    attacker_key: str
    admin_key: str


Path_ = Callable[[Scene, Forged], Awaitable[str]]


@pytest.fixture
def archiver(service_env: ServiceEnv, logs_dir: Path) -> Iterator[ServiceProcess]:
    process = start_archiver(service_env.env(), logs_dir / "archiver.log")
    yield process
    process.stop()


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_client(settings) as c:
        yield c


@pytest.fixture
async def scene(
    uow_factory: UnitOfWorkFactory, service_env: ServiceEnv, vhost: str, client: httpx.AsyncClient
) -> Scene:
    attacker, victim = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    return Scene(
        attacker=attacker,
        victim=victim,
        attacker_user=broker_user(attacker, vhost),
        env=service_env.env(USER="night-operator"),
        client=client,
        victim_key=await tenant_key(uow_factory, victim, "victim ops"),
        attacker_key=await tenant_key(uow_factory, attacker, "attacker ops"),
        admin_key=await admin_key(uow_factory, "operator"),
    )


async def cli_bulk_by_reason(s: Scene, f: Forged) -> str:
    # The README's post-outage command, narrowed to this forgery's batch so other tests' rows stay out.
    code, out = await remit(
        s.env, "dlq", "replay", "--reason", "retries_exhausted", "--batch", f.wire["correlation_id"]
    )
    return f"exit {code}: {out.strip()[-300:]}"


async def cli_by_id_forced(s: Scene, f: Forged) -> str:
    code, out = await remit(s.env, "dlq", "replay", str(f.dead_letter_id), "--force", "--why", "customer called")
    return f"exit {code}: {out.strip()[-300:]}"


async def cli_bulk_forced(s: Scene, f: Forged) -> str:
    batch = f.wire["correlation_id"]
    code, out = await remit(s.env, "dlq", "replay", "--batch", batch, "--force")
    return f"exit {code}: {out.strip()[-300:]}"


async def _api(s: Scene, key: str, f: Forged, force: bool) -> str:
    body = {"ids": [f.dead_letter_id], "force": force, "why": "please"}
    response = await s.client.post("/v1/dead-letters/replay", headers=bearer(key), json=body)
    return f"{response.status_code}: {response.text[:300]}"


async def api_victim_key(s: Scene, f: Forged) -> str:
    return await _api(s, s.victim_key, f, force=False)


async def api_victim_key_forced(s: Scene, f: Forged) -> str:
    return await _api(s, s.victim_key, f, force=True)


async def api_attacker_key(s: Scene, f: Forged) -> str:
    return await _api(s, s.attacker_key, f, force=False)


async def api_attacker_key_forced(s: Scene, f: Forged) -> str:
    return await _api(s, s.attacker_key, f, force=True)


async def api_admin_key_forced(s: Scene, f: Forged) -> str:
    return await _api(s, s.admin_key, f, force=True)


async def _console(s: Scene, f: Forged, force: bool) -> str:
    await log_in(s.client, s.victim_key)
    page = await s.client.get("/console/dead-letters")
    form: dict[str, Any] = {
        "csrf_token": hidden(page.text, "csrf_token"),
        "step": "confirm",
        "ids": str(f.dead_letter_id),
    }
    if force:
        form["force"] = "true"
    response = await s.client.post("/console/replay", data=form)
    flashed = (await s.client.get("/console/dead-letters")).text if response.status_code == 303 else ""
    return f"{response.status_code}: {response.text[:200]} {_flash(flashed)}"


def _flash(html: str) -> str:
    start = html.find('class="flash')
    return html[start : start + 300] if start >= 0 else ""


async def console_victim_key(s: Scene, f: Forged) -> str:
    return await _console(s, f, force=False)


async def console_victim_key_forced(s: Scene, f: Forged) -> str:
    return await _console(s, f, force=True)


PATHS: dict[str, Path_] = {
    "cli replay --reason retries_exhausted": cli_bulk_by_reason,
    "cli replay ID --force": cli_by_id_forced,
    "cli replay --batch B --force": cli_bulk_forced,
    "api, victim's key": api_victim_key,
    "api, victim's key, force": api_victim_key_forced,
    "api, attacker's key": api_attacker_key,
    "api, attacker's key, force": api_attacker_key_forced,
    "api, admin key, force": api_admin_key_forced,
    "console, victim's key": console_victim_key,
    "console, victim's key, force": console_victim_key_forced,
}


def forgeries(scene: Scene) -> dict[str, Forged]:
    """One forged payment per replay path, each in its own batch so each path acts on its own."""
    return {path: Forged(make_wire_dict(tenant_id=scene.victim, correlation_id=new_correlation_id())) for path in PATHS}


async def stored(uow: UnitOfWorkFactory, forged: dict[str, Forged]) -> dict[str, Any]:
    """Wait until every forgery is in the dead-letter store (under whichever tenant); its rows by path."""
    ids = {path: f.wire["message_id"] for path, f in forged.items()}

    async def rows() -> dict[str, Any]:
        async with uow() as u:
            query = select(dead_letters).where(dead_letters.c.message_id.in_(list(ids.values())))
            found = {str(r.message_id): r for r in (await u.connection.execute(query)).all()}
        return {path: found[m] for path, m in ids.items() if m in found}

    async def all_there() -> bool:
        return len(await rows()) == len(ids)

    await eventually(all_there, timeout=60, poll=0.2)
    result = await rows()
    for path, f in forged.items():
        f.dead_letter_id = int(result[path].dead_letter_id)
    return result


async def try_every_path(scene: Scene, forged: dict[str, Forged]) -> dict[str, str]:
    return {path: await attempt(scene, forged[path]) for path, attempt in PATHS.items()}


async def let_the_consumer_finish(settings: Settings) -> None:
    """Whatever a replay published is processed (or dead-lettered) before the ledger is read."""
    queue = Topology.from_settings(settings).tier_queue("basic")

    async def drained() -> bool:
        return await queue_depth_now(settings.amqp_url, queue) == 0

    await eventually(drained, timeout=60)
    await asyncio.sleep(2.0)  # every chance for a (wrong) booking to commit


async def assert_victim_untouched(
    uow: UnitOfWorkFactory, scene: Scene, forged: dict[str, Forged], answers: dict[str, str]
) -> None:
    batches = {r.correlation_id for r in await ledger_rows_for_tenant(uow, scene.victim)}
    booked = {path: answers[path] for path, f in forged.items() if f.wire["correlation_id"] in batches}
    async with uow() as u:
        victim_dead = (
            await u.connection.execute(
                select(dead_letters.c.dead_letter_id).where(dead_letters.c.tenant_id == scene.victim)
            )
        ).all()
        processed = (
            await u.connection.execute(
                select(processed_messages.c.message_id).where(processed_messages.c.tenant_id == scene.victim)
            )
        ).all()
    assert not booked, f"booked in the victim's ledger by: {booked}"
    assert not processed
    assert not victim_dead, "a forged dead letter was filed under the victim"


def assert_filed_under_the_attacker(rows: dict[str, Any], scene: Scene, reason: str) -> None:
    """Each forgery is the attacker's dead letter: who published it, what it claimed, kept as evidence."""
    for path, row in rows.items():
        assert (row.tenant_id, row.reason) == (scene.attacker, reason), path
        assert row.published_by == scene.attacker_user
        assert row.claimed_tenant == scene.victim
        assert row.claims == FORGED
        assert row.security_event


async def attempts_of(uow: UnitOfWorkFactory, forged: dict[str, Forged]) -> list[Any]:
    ids = [f.wire["message_id"] for f in forged.values()]
    async with uow() as u:
        query = select(delivery_attempts).where(delivery_attempts.c.message_id.in_(ids))
        return list((await u.connection.execute(query)).all())


async def test_a_forged_dead_letter_that_expires_is_the_attackers_and_no_replay_books_it(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    service_env: ServiceEnv,
    logs_dir: Path,
    tenant_users: TenantUsers,
    archiver: ServiceProcess,
    scene: Scene,
) -> None:
    publisher = tenant_users.publisher(scene.attacker)
    forged = forgeries(scene)
    for f in forged.values():  # no consumer yet: the broker expires each one into the dead-letter exchange
        await publisher.publish(f.wire, tenant_header=scene.victim, extra_headers=FORGED, expiration=0.001)
    rows = await stored(uow_factory, forged)

    consumer = ServiceProcess.consumer(service_env.env(), logs_dir / "consumer.log")
    try:
        answers = await try_every_path(scene, forged)
        await let_the_consumer_finish(settings)
    finally:
        consumer.stop()

    await assert_victim_untouched(uow_factory, scene, forged, answers)
    assert_filed_under_the_attacker(rows, scene, "expired")
    for row in rows.values():  # the broker's verdict, and none of the forged headers believed
        assert row.error_type == "BrokerDeadLetter"
        assert not any(name.startswith(headers.PREFIX) for name in row.headers)
    _assert_refused(answers, why="expired")
    await _assert_audited(scene, forged)


async def test_a_forged_payment_the_consumer_quarantines_is_the_attackers_and_never_replayable(
    engine: AsyncEngine,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    tenant_users: TenantUsers,
    consumer: ServiceProcess,
    archiver: ServiceProcess,
    scene: Scene,
) -> None:
    publisher = tenant_users.publisher(scene.attacker)
    forged = forgeries(scene)
    for f in forged.values():
        await publisher.publish(f.wire, tenant_header=scene.victim, extra_headers=FORGED)
    rows = await stored(uow_factory, forged)

    answers = await try_every_path(scene, forged)
    await let_the_consumer_finish(settings)

    await assert_victim_untouched(uow_factory, scene, forged, answers)
    assert_filed_under_the_attacker(rows, scene, "tenant_mismatch")
    assert {row.status for row in rows.values()} == {"open"}
    attempts = await attempts_of(uow_factory, forged)
    assert len(attempts) == len(forged)
    assert {(a.tenant_id, a.outcome) for a in attempts} == {(scene.attacker, "dead_lettered")}
    _assert_refused(answers, why="tenant_mismatch")
    await _assert_audited(scene, forged)

    # Operators see it as a security event, filed under the attacker.
    as_admin = bearer(scene.admin_key)
    listed = (await scene.client.get(f"/v1/dead-letters?tenant={scene.attacker}", headers=as_admin)).json()
    assert {(d["reason"], d["security_event"]) for d in listed["dead_letters"]} == {("tenant_mismatch", True)}
    stats = (await scene.client.get(f"/v1/dead-letters/stats?tenant={scene.attacker}", headers=as_admin)).json()
    assert stats["security_events"] == len(forged)
    code, out = await remit(scene.env, "dlq", "list", "--tenant", scene.attacker, "--json")
    assert code == 0
    assert {d["security_event"] for d in json.loads(out)["dead_letters"]} == {True}
    await log_in(scene.client, scene.admin_key)
    page = await scene.client.get(f"/console/dead-letters?tenant={scene.attacker}")
    assert page.text.count(">security event<") == len(forged)
    assert f"Security events: {len(forged)}" in page.text
    metrics = Metrics()
    await refresh(uow_factory_for(engine), metrics)
    assert metrics.registry.get_sample_value("remit_security_events", {"tenant": scene.attacker}) == len(forged)
    assert metrics.registry.get_sample_value("remit_security_events", {"tenant": scene.victim}) is None


async def _assert_audited(scene: Scene, forged: dict[str, Forged]) -> None:
    """Every attempt is on record with its caller: refused requests, and each refused dead letter with why."""
    as_admin = bearer(scene.admin_key)
    admin_forced = forged["api, admin key, force"].dead_letter_id
    trail = (await scene.client.get(f"/v1/dead-letters/audit?id={admin_forced}", headers=as_admin)).json()
    assert [(e["action"], e["actor"].split(" [")[0]) for e in trail["audit"]] == [("refuse", "operator")]
    victim = (await scene.client.get("/v1/dead-letters/audit", headers=bearer(scene.victim_key))).json()
    assert {(r["force"], r["outcome"].split(":")[0]) for r in victim["requests"]} == {
        (False, "request refused"),  # another tenant's id: not found
        (True, "request refused"),  # force from a tenant key
    }
    assert all(r["actor"].startswith("victim ops [key ") for r in victim["requests"])


def _assert_refused(answers: dict[str, str], why: str) -> None:
    """Each path said no, in its own way: a scoped caller cannot even see the victim-named dead letter."""
    assert answers["api, victim's key"].startswith("404"), answers
    assert answers["api, victim's key, force"].startswith("403"), answers
    assert answers["api, attacker's key, force"].startswith("403"), answers
    mine = answers["api, attacker's key"]  # the attacker sees its own dead letter, and cannot replay it
    assert mine.startswith("200"), mine
    assert '"refused"' in mine, mine
    admin = answers["api, admin key, force"]
    assert admin.startswith("200"), admin
    assert '"refused"' in admin, admin
    assert answers["console, victim's key"].startswith("404"), answers
    assert "admin" in answers["console, victim's key, force"], answers
    assert answers["cli replay ID --force"].startswith("exit 2"), answers
    assert why in answers["cli replay ID --force"], answers
    assert "replayed" not in answers["cli replay --reason retries_exhausted"].replace("not replayed", "")

"""Dead-letter endpoints: every one scoped to the caller's tenant (404 for another tenant's ids), the admin
sees all, and a replay through the API moves money exactly once with a real consumer running."""

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import (
    admin_client,
    admin_key,
    bearer,
    seed_dead_letter,
    tenant_key,
    two_tenants_with_a_dead_letter_each,
)
from tests.utils.dead_letters import dead_letter
from tests.utils.services import ServiceProcess, eventually
from tests.utils.world import fresh_tenant, ledger_count

pytestmark = pytest.mark.integration


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_client(settings) as c:
        yield c


async def test_a_tenant_can_neither_see_nor_touch_another_tenants_dead_letters(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    mine, _ = await seed_dead_letter(uow_factory, a, amount_cents=1111)
    theirs, _ = await seed_dead_letter(uow_factory, b, amount_cents=2222, currency="NZD")
    key_b_admin = await admin_key(uow_factory)
    await client.post(f"/v1/dead-letters/{theirs}/discard", headers=bearer(key_b_admin), json={"reason": "b's own"})
    theirs_open, _ = await seed_dead_letter(uow_factory, b)
    as_a = bearer(await tenant_key(uow_factory, a))

    for query in ("", f"?tenant={b}", "?status=all", f"?status=all&tenant={b}"):
        listed = (await client.get(f"/v1/dead-letters{query}", headers=as_a)).json()["dead_letters"]
        assert {d["tenant_id"] for d in listed} <= {a}, query
    assert [
        d["dead_letter_id"] for d in (await client.get("/v1/dead-letters", headers=as_a)).json()["dead_letters"]
    ] == [mine]

    for other in (theirs, theirs_open, 999_999_999):
        assert (await client.get(f"/v1/dead-letters/{other}", headers=as_a)).status_code == 404
        replay = await client.post("/v1/dead-letters/replay", headers=as_a, json={"ids": [other], "dry_run": True})
        assert replay.status_code == 404
        discard = await client.post(f"/v1/dead-letters/{other}/discard", headers=as_a, json={"reason": "not mine"})
        assert discard.status_code == 404
    # Naming one's own id next to another tenant's replays nothing at all.
    both = await client.post("/v1/dead-letters/replay", headers=as_a, json={"ids": [mine, theirs_open]})
    assert both.status_code == 404
    assert (await dead_letter(uow_factory, theirs_open)).status == "open"
    assert (await dead_letter(uow_factory, mine)).status == "open"

    # A tenant filter in the body cannot widen the scope: it selects nothing beyond the caller's own.
    widened = await client.post(
        "/v1/dead-letters/replay", headers=as_a, json={"filter": {"tenant": b}, "dry_run": True}
    )
    assert widened.status_code == 422
    everything = await client.post("/v1/dead-letters/replay", headers=as_a, json={"all": True, "dry_run": True})
    assert [o["dead_letter_id"] for o in everything.json()["outcomes"]] == [mine]

    stats = (await client.get(f"/v1/dead-letters/stats?status=all&tenant={b}", headers=as_a)).json()
    assert stats["total"] == [{"group": "all", "currency": "AUD", "count": 1, "amount_cents": 1111}]
    assert [row["group"] for row in stats["by_tenant"]] == [a]

    trail = (await client.get(f"/v1/dead-letters/audit?tenant={b}", headers=as_a)).json()
    assert {e["tenant_id"] for e in trail["audit"]} == {a}  # its own dry run only; b's discard is not shown
    assert {r["tenant_id"] for r in trail["requests"]} == {a}  # its own requests, the refused ones too
    assert (await client.get(f"/v1/dead-letters/audit?id={theirs}", headers=as_a)).json() == {
        "audit": [],
        "requests": [],
    }


async def test_the_admin_sees_every_tenant_and_may_unmask(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    one, _ = await seed_dead_letter(uow_factory, a, creditor_account="900000123")
    two, _ = await seed_dead_letter(uow_factory, b)
    as_admin = bearer(await admin_key(uow_factory))

    ids = {
        d["dead_letter_id"]
        for d in (await client.get("/v1/dead-letters?limit=1000", headers=as_admin)).json()["dead_letters"]
    }
    assert {one, two} <= ids
    only_b = (await client.get(f"/v1/dead-letters?tenant={b}", headers=as_admin)).json()["dead_letters"]
    assert [d["dead_letter_id"] for d in only_b] == [two]

    masked = (await client.get(f"/v1/dead-letters/{one}", headers=as_admin)).json()
    assert masked["masked"] is True
    assert masked["body_json"]["creditor_account"] == "******123"
    unmasked = (await client.get(f"/v1/dead-letters/{one}?unmask=true", headers=as_admin)).json()
    assert unmasked["body_json"]["creditor_account"] == "900000123"
    as_a = bearer(await tenant_key(uow_factory, a))
    assert (await client.get(f"/v1/dead-letters/{one}", headers=as_a)).json()["body_json"][
        "creditor_account"
    ] == "******123"


async def test_replay_through_the_api_moves_money_exactly_once(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, consumer: ServiceProcess
) -> None:
    tenant = await fresh_tenant(uow_factory)
    dead, wire = await seed_dead_letter(uow_factory, tenant)
    as_tenant = bearer(await tenant_key(uow_factory, tenant, label="alice"))

    preview = await client.post("/v1/dead-letters/replay", headers=as_tenant, json={"ids": [dead], "dry_run": True})
    assert preview.json()["summary"] == {"would replay": 1}
    assert (await dead_letter(uow_factory, dead)).status == "open"

    body = {"ids": [dead], "why": "outage over"}
    replayed = await client.post("/v1/dead-letters/replay", headers=as_tenant, json=body)
    assert replayed.status_code == 200
    assert replayed.json()["outcomes"][0]["action"] == "replayed"

    async def booked() -> bool:
        return await ledger_count(uow_factory, wire["message_id"]) == 1

    await eventually(booked)
    again = await client.post("/v1/dead-letters/replay", headers=as_tenant, json=body)
    assert again.json()["summary"] == {"resolved": 1}
    await asyncio.sleep(1.0)  # every chance for a (wrong) second booking
    assert await ledger_count(uow_factory, wire["message_id"]) == 1

    audit = (await client.get(f"/v1/dead-letters/audit?id={dead}", headers=as_tenant)).json()["audit"]
    assert [(e["action"], e["dry_run"], e["why"]) for e in reversed(audit)] == [
        ("replay", True, None),
        ("replay", False, "outage over"),
        ("resolve", False, "outage over"),
    ]
    assert all(e["actor"].startswith("alice [key ") for e in audit)


async def test_replay_needs_a_selection_and_permanent_failures_need_force(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    tenant = await fresh_tenant(uow_factory)
    dead, _ = await seed_dead_letter(uow_factory, tenant, reason="permanent_failure")
    as_tenant = bearer(await tenant_key(uow_factory, tenant))

    nothing = await client.post("/v1/dead-letters/replay", headers=as_tenant, json={"dry_run": True})
    assert nothing.status_code == 422
    assert "say which dead letters" in nothing.json()["detail"]
    mixed = await client.post("/v1/dead-letters/replay", headers=as_tenant, json={"ids": [dead], "all": True})
    assert mixed.status_code == 422

    refused = (
        await client.post("/v1/dead-letters/replay", headers=as_tenant, json={"ids": [dead], "dry_run": True})
    ).json()
    assert refused["outcomes"][0]["action"] == "refused"
    # A tenant's key may not force: the refusal says who can, and suggests no flag it would be refused.
    assert "ask an operator to force the replay" in refused["outcomes"][0]["detail"]
    assert 'force": true' not in refused["outcomes"][0]["detail"]
    assert "--force" not in refused["outcomes"][0]["detail"]
    # Force is for admin keys: a tenant's own key is refused, and the attempt is in the audit trail.
    forced = {"ids": [dead], "dry_run": True, "force": True}
    by_tenant = await client.post("/v1/dead-letters/replay", headers=as_tenant, json=forced)
    assert by_tenant.status_code == 403
    assert "admin" in by_tenant.json()["detail"]
    as_admin = bearer(await admin_key(uow_factory))
    assert (await client.post("/v1/dead-letters/replay", headers=as_admin, json=forced)).json()["summary"] == {
        "would replay": 1
    }
    requests = (await client.get("/v1/dead-letters/audit", headers=as_tenant)).json()["requests"]
    assert [(r["force"], r["dry_run"], r["outcome"].split(":")[0]) for r in requests] == [
        (True, True, "request refused"),  # force from a tenant key
        (False, True, "refused"),  # one dead letter refused (needs force)
        (False, False, "request refused"),  # ids and all
        (False, True, "request refused"),  # nothing selected
    ]
    assert "admin" in requests[0]["outcome"]
    assert all(r["actor"].startswith(f"{tenant} ops [key ") and r["tenant_id"] == tenant for r in requests)
    unforced = await client.post("/v1/dead-letters/replay", headers=as_admin, json={"ids": [dead], "dry_run": True})
    assert '"force": true' in unforced.json()["outcomes"][0]["detail"]  # an admin may: told how, in HTTP's words


async def test_a_forced_replay_reads_as_forced_in_the_payments_trace_over_http(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    tenant = await fresh_tenant(uow_factory)
    dead, wire = await seed_dead_letter(uow_factory, tenant, reason="permanent_failure")
    as_admin = bearer(await admin_key(uow_factory, "carol"))
    replayed = await client.post(
        "/v1/dead-letters/replay", headers=as_admin, json={"ids": [dead], "force": True, "why": "account reopened"}
    )
    assert replayed.json()["summary"] == {"replayed": 1}, replayed.text
    trace = (await client.get(f"/v1/payments/{wire['message_id']}", headers=as_admin)).json()
    [event] = [e for e in trace["events"] if e["stage"] == "replayed"]
    assert event["summary"].startswith("replayed by carol [key "), event
    assert ", forced" in event["summary"]
    assert "--force" not in str(trace)


async def test_discard_needs_a_reason_and_an_open_dead_letter(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    tenant = await fresh_tenant(uow_factory)
    dead, _ = await seed_dead_letter(uow_factory, tenant, reason="permanent_failure")
    as_tenant = bearer(await tenant_key(uow_factory, tenant, label="bob"))
    url = f"/v1/dead-letters/{dead}/discard"

    for body in ({}, {"reason": ""}, {"reason": "   "}):
        assert (await client.post(url, headers=as_tenant, json=body)).status_code == 422
    done = await client.post(url, headers=as_tenant, json={"reason": "account closed; customer resubmits"})
    assert done.status_code == 200
    assert done.json()["status"] == "discarded"
    assert done.json()["actor"].startswith("bob [key ")
    again = await client.post(url, headers=as_tenant, json={"reason": "again"})
    assert again.status_code == 409
    row = await dead_letter(uow_factory, dead)
    assert row.status == "discarded"  # marked, never deleted


async def test_filters_naming_unknown_values_are_refused_without_showing_other_tenants_values(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    a, b, mine, theirs = await two_tenants_with_a_dead_letter_each(uow_factory)
    as_a, as_admin = bearer(await tenant_key(uow_factory, a)), bearer(await admin_key(uow_factory))

    ok = await client.get("/v1/dead-letters", params={"batch": mine["correlation_id"]}, headers=as_a)
    assert ok.status_code == 200
    assert len(ok.json()["dead_letters"]) == 1

    reason = await client.get("/v1/dead-letters", params={"reason": "acount_closed"}, headers=as_a)
    assert reason.status_code == 422
    assert "'acount_closed' is not a dead-letter reason; did you mean 'account_closed'?" in str(reason.json())

    # Another tenant's batch is unknown to a tenant's key, and its id is not offered as a suggestion.
    hidden = await client.get("/v1/dead-letters", params={"batch": theirs["correlation_id"]}, headers=as_a)
    assert hidden.status_code == 422
    answer = str(hidden.json()).replace(f"{theirs['correlation_id']!r} is not", "")
    assert theirs["correlation_id"] not in answer
    assert mine["correlation_id"] in answer

    typo = b[:-1] + ("x" if b[-1] != "x" else "y")
    for path in ("/v1/dead-letters", "/v1/dead-letters/stats", "/v1/dead-letters/audit"):
        wrong = await client.get(path, params={"tenant": typo}, headers=as_admin)
        assert wrong.status_code == 422, path
        # b first: the closest; others may follow ("or ...") when the session database holds many tenants
        assert f"tenant {typo!r} is not a tenant; did you mean {b!r}" in str(wrong.json()), path
    replay = await client.post(
        "/v1/dead-letters/replay", headers=as_admin, json={"filter": {"batch": "no-such-batch"}, "dry_run": True}
    )
    assert replay.status_code == 422
    assert "batch 'no-such-batch' is not a batch" in str(replay.json())

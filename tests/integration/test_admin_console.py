"""The console's session and form protections, in process: cookie flags, login and CSRF tokens,
revocation ending a session, tenant scope on pages, and the security headers; a bank file uploaded and its
status report downloaded."""

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from app.admin.api_keys import create_api_key, revoke_api_key
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import admin_client, hidden, log_in, seed_dead_letter, two_tenants_with_a_dead_letter_each
from tests.utils.dead_letters import dead_letter
from tests.utils.pain002 import read_pain002, xsd_errors
from tests.utils.world import fresh_tenant

pytestmark = pytest.mark.integration
EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_client(settings) as c:
        yield c


async def test_login_sets_a_strict_http_only_cookie_and_refuses_bad_keys(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    tenant = await fresh_tenant(uow_factory)
    key = (await create_api_key(uow_factory, tenant, None)).key
    assert (await client.get("/console/dead-letters")).headers["location"] == "/console/login"

    bad = await log_in(client, "rk_000000000000_nope")
    assert bad.status_code == 401
    assert "not valid" in bad.text
    no_token = await client.post("/console/login", data={"api_key": key, "login_token": "forged"})
    assert no_token.status_code == 403

    ok = await log_in(client, key)
    assert (ok.status_code, ok.headers["location"]) == (303, "/console/dead-letters")
    cookie = next(c for c in ok.headers.get_list("set-cookie") if c.startswith("remit_console="))
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/console" in cookie
    assert key not in cookie  # the cookie holds a random session id, never the key

    page = await client.get("/console/dead-letters")
    assert page.status_code == 200
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["x-frame-options"] == "DENY"


async def test_forms_need_the_sessions_csrf_token(client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory) -> None:
    tenant = await fresh_tenant(uow_factory)
    dead, _ = await seed_dead_letter(uow_factory, tenant, reason="permanent_failure")
    await log_in(client, (await create_api_key(uow_factory, tenant, None)).key)
    detail = await client.get(f"/console/dead-letters/{dead}")
    token = hidden(detail.text, "csrf_token")

    for data in ({}, {"csrf_token": "forged"}):
        form = {**data, "reason": "x", "step": "confirm"}
        assert (await client.post(f"/console/dead-letters/{dead}/discard", data=form)).status_code == 403
        replay = {**data, "ids": str(dead), "step": "confirm", "force": "true"}
        assert (await client.post("/console/replay", data=replay)).status_code == 403
    assert (await dead_letter(uow_factory, dead)).status == "open"

    review = await client.post(f"/console/dead-letters/{dead}/discard", data={"csrf_token": token, "reason": "dup"})
    assert "Yes, discard" in review.text
    assert (await dead_letter(uow_factory, dead)).status == "open"  # reviewing changes nothing
    confirm = {"csrf_token": token, "reason": "dup", "step": "confirm"}
    done = await client.post(f"/console/dead-letters/{dead}/discard", data=confirm)
    assert done.status_code == 303
    assert (await dead_letter(uow_factory, dead)).status == "discarded"


async def test_pages_are_scoped_to_the_tenant_and_unmasking_is_for_admins(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    mine, mine_wire = await seed_dead_letter(uow_factory, a)
    theirs, their_wire = await seed_dead_letter(uow_factory, b)
    await log_in(client, (await create_api_key(uow_factory, a, None)).key)

    listing = (await client.get(f"/console/dead-letters?tenant={b}&status=all")).text
    assert mine_wire["payment_reference"] in listing
    assert their_wire["payment_reference"] not in listing
    assert (await client.get(f"/console/dead-letters/{theirs}")).status_code == 404
    assert (await client.get(f"/console/dead-letters/{mine}?unmask=true")).status_code == 403
    token = hidden((await client.get(f"/console/dead-letters/{mine}")).text, "csrf_token")
    preview = await client.post("/console/replay", data={"csrf_token": token, "dead_letter_id": str(theirs)})
    assert preview.status_code == 404
    confirm = {"csrf_token": token, "ids": str(theirs), "step": "confirm"}
    assert (await client.post("/console/replay", data=confirm)).status_code == 404
    assert (await dead_letter(uow_factory, theirs)).status == "open"


async def test_revoking_the_key_ends_its_console_sessions(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    tenant = await fresh_tenant(uow_factory)
    new = await create_api_key(uow_factory, tenant, None)
    await log_in(client, new.key)
    assert (await client.get("/console/audit")).status_code == 200
    await revoke_api_key(uow_factory, new.key_id)
    gone = await client.get("/console/audit")
    assert (gone.status_code, gone.headers["location"]) == (303, "/console/login")


async def test_a_tenant_uploads_a_bank_file_of_any_format_and_downloads_its_report(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    tenant = await fresh_tenant(uow_factory)
    await log_in(client, (await create_api_key(uow_factory, tenant, None)).key)
    page = await client.get("/console/batches")
    assert page.status_code == 200
    token = hidden(page.text, "csrf_token")
    for fmt in ("pain.001.001.09", "pain.001.001.03", "aba"):
        assert f'<option value="{fmt}">' in page.text

    aba = (EXAMPLES / "initech_20250501.aba").read_bytes()
    forged = await client.post("/console/batches", data={"csrf_token": "forged"}, files={"file": ("i.aba", aba)})
    assert forged.status_code == 403
    receipt = await client.post("/console/batches", data={"csrf_token": token}, files={"file": ("i.aba", aba)})
    assert receipt.status_code == 200, receipt.text
    assert "<strong>28</strong> payments accepted, <strong>5</strong> rows rejected" in receipt.text
    assert "transaction code 13 is a debit" in receipt.text
    batch = re.search(r"/console/batches/([^/]+)/status-report\?format=pain\.002\"", receipt.text)
    assert batch is not None
    report = await client.get(f"/console/batches/{batch.group(1)}/status-report?format=pain.002")
    assert report.status_code == 200
    assert xsd_errors(report.content, "pain.002.001.10") == []
    assert read_pain002(report.content).per_status == {"PDNG": 28, "RJCT": 5}

    again = await client.post("/console/batches", data={"csrf_token": token}, files={"file": ("i.aba", aba)})
    assert again.status_code == 303  # refused whole: back to the page with why
    assert "already submitted as batch" in (await client.get("/console/batches")).text


async def test_admins_see_batches_but_cannot_upload(client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory) -> None:
    await log_in(client, (await create_api_key(uow_factory, None, "operator")).key)
    page = await client.get("/console/batches")
    assert page.status_code == 200
    assert 'enctype="multipart/form-data"' not in page.text
    refused = await client.post(
        "/console/batches",
        data={"csrf_token": hidden(page.text, "csrf_token")},
        files={"file": ("a.csv", b"payment_reference,amount_cents\n")},
    )
    assert refused.status_code == 403


async def test_a_filter_naming_an_unknown_value_shows_the_known_ones_not_an_empty_list(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    a, _, mine, theirs = await two_tenants_with_a_dead_letter_each(uow_factory)
    await log_in(client, (await create_api_key(uow_factory, a, None)).key)

    page = await client.get("/console/dead-letters", params={"reason": "retries_exhasted"})
    assert page.status_code == 200
    assert "did you mean &#39;retries_exhausted&#39;?" in page.text
    assert mine["payment_reference"] in page.text  # the unfiltered list, with the error above it

    hidden_batch = (await client.get("/console/dead-letters", params={"batch": theirs["correlation_id"]})).text
    assert "is not a batch of tenant" in hidden_batch
    assert hidden_batch.count(theirs["correlation_id"]) == 1  # the value asked for, never a suggestion
    assert theirs["payment_reference"] not in hidden_batch

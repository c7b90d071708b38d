"""The console in real headless Chromium (Debian's package, driven by Playwright) against the admin app and
the consumer as real processes: a tenant sees only its own dead letters, a replay from the page (dry-run
preview, then confirm) moves the money exactly once, a discard needs a reason and a confirmation, and the
audit trail shows both; the batch pages, a payment's trace (found from its batch, replayed, found again by
its row) and the reconciliation pages after a real `remit reconcile`.

Screenshots go to $REMIT_SCREENSHOTS_DIR (docs/screenshots when regenerating the docs), else a temp dir.
"""

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg
import pytest

from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import admin_key, seed_dead_letter, start_admin, tenant_key, wait_healthy
from tests.utils.dead_letters import start_archiver, wait_for_dead_letters
from tests.utils.factories import make_wire_dict
from tests.utils.services import ROOT, ServiceEnv, ServiceProcess, eventually
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import booked_once, fresh_tenant, ledger_count, outbox_rows, payment_row, write_csv

try:
    from playwright.async_api import Browser, Page, async_playwright, expect
except ImportError:  # pragma: no cover - reported by the fixture below
    async_playwright = None  # type: ignore[assignment]

pytestmark = pytest.mark.e2e

CHROMIUM = Path(os.environ.get("REMIT_CHROMIUM", "/usr/bin/chromium"))
HAVE_CHROMIUM = CHROMIUM.exists()
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def browser_missing(what: str) -> None:
    message = f"{what}; install it: apt-get install chromium chromium-driver && pip install playwright"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI: {message}", pytrace=False)
    pytest.skip(message)


@pytest.fixture
async def browser() -> AsyncIterator["Browser"]:
    if async_playwright is None:
        browser_missing("Playwright for Python is not installed")
    if not HAVE_CHROMIUM:
        browser_missing(f"Chromium is not at {CHROMIUM}")
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        await chromium.close()


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("REMIT_SCREENSHOTS_DIR") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def services(service_env: ServiceEnv, logs_dir: Path) -> Iterator[tuple[ServiceProcess, ServiceProcess]]:
    consumer = ServiceProcess.consumer(service_env.env(), logs_dir / "consumer.log")
    admin = start_admin(service_env.env(), logs_dir / "admin.log")
    yield consumer, admin
    admin.stop()
    consumer.stop()


async def test_console_scoped_replay_once_discard_and_audit(
    browser: "Browser",
    services: tuple[ServiceProcess, ServiceProcess],
    uow_factory: UnitOfWorkFactory,
    screenshots: Path,
) -> None:
    _, admin = services
    base = f"http://127.0.0.1:{admin.port}"
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    to_replay, replay_wire = await seed_dead_letter(uow_factory, a, amount_cents=310_000)
    to_discard, discard_wire = await seed_dead_letter(uow_factory, a, reason="permanent_failure", amount_cents=45_000)
    theirs, their_wire = await seed_dead_letter(uow_factory, b, amount_cents=99_000, currency="NZD")
    key_a, key_admin = await tenant_key(uow_factory, a, "alice"), await admin_key(uow_factory, "ops lead")
    await wait_healthy(base)

    context = await browser.new_context(viewport={"width": 1360, "height": 900})
    page = await context.new_page()
    await log_in(page, base, key_a, screenshots / "login.png")

    # Only a's dead letters, with a's value at risk; b's reference is nowhere on the page.
    html = await page.content()
    assert replay_wire["payment_reference"] in html
    assert discard_wire["payment_reference"] in html
    assert their_wire["payment_reference"] not in html
    assert "NZD" not in html
    await expect(page.get_by_role("heading", name="Value at risk per currency")).to_be_visible()
    await shot(page, screenshots / "dead-letters.png")
    response = await page.goto(f"{base}/console/dead-letters/{theirs}")
    assert response is not None
    assert response.status == 404

    # A POST without the session's CSRF token is refused and changes nothing.
    forged = await page.request.post(
        f"{base}/console/replay", form={"dead_letter_id": str(to_replay), "step": "confirm", "ids": str(to_replay)}
    )
    assert forged.status == 403

    # Replay: a dry-run preview, then the confirmation; the consumer books it once.
    await page.goto(f"{base}/console/dead-letters/{to_replay}")
    await expect(page.get_by_text("******")).not_to_have_count(0)  # account numbers masked
    await shot(page, screenshots / "detail.png")
    await page.get_by_label("Note for the audit trail").fill("core banking outage is over")
    await page.get_by_role("button", name="Preview replay (dry run)").click()
    await expect(page.get_by_role("cell", name="would replay")).to_be_visible()
    await shot(page, screenshots / "replay-preview.png")
    assert await ledger_count(uow_factory, replay_wire["message_id"]) == 0  # a preview publishes nothing
    await page.get_by_role("button", name="Yes, replay").click()
    await expect(page.get_by_role("status")).to_contain_text("replayed: 1")

    async def booked() -> bool:
        return await ledger_count(uow_factory, replay_wire["message_id"]) == 1

    await eventually(booked, timeout=30)
    await asyncio.sleep(1.0)  # every chance for a (wrong) second booking
    assert await ledger_count(uow_factory, replay_wire["message_id"]) == 1

    # Discard: a reason, then the confirmation.
    await page.goto(f"{base}/console/dead-letters/{to_discard}")
    await page.get_by_label("Why no further action is needed").fill("account closed; customer resubmits")
    await page.get_by_role("button", name="Review discard").click()
    await expect(page.get_by_role("heading", name=f"Discard dead letter {to_discard}?")).to_be_visible()
    await shot(page, screenshots / "discard-confirm.png")
    await page.get_by_role("button", name="Yes, discard").click()
    await expect(page.get_by_role("status")).to_contain_text(f"Dead letter {to_discard} discarded")

    # The audit trail shows the replay (and its dry run) and the discard, for a's dead letters only.
    await page.get_by_role("link", name="Audit trail").click()
    trail = await page.inner_text("main")
    assert "core banking outage is over" in trail
    assert "account closed; customer resubmits" in trail
    assert "alice [key" in trail
    rows = await page.locator("#entries tbody tr").all_inner_texts()
    assert sorted(row.split("\t")[2] for row in rows) == ["discard", "replay", "replay"]
    requests = await page.locator("#requests tbody tr").all_inner_texts()
    assert len(requests) == 2  # the preview (a dry run) and the replay, each with its outcome
    await shot(page, screenshots / "audit.png")

    await page.get_by_role("button", name="Log out").click()
    await page.goto(f"{base}/console/dead-letters")
    assert page.url.endswith("/console/login")

    # The admin sees every tenant's dead letters.
    await log_in(page, base, key_admin, None)
    await page.goto(f"{base}/console/dead-letters?status=all")
    html = await page.content()
    assert their_wire["payment_reference"] in html
    assert replay_wire["payment_reference"] in html
    await shot(page, screenshots / "dead-letters-admin.png")
    await context.close()


async def log_in(page: "Page", base: str, key: str, screenshot: Path | None) -> None:
    await page.goto(f"{base}/console/login")
    if screenshot is not None:
        await shot(page, screenshot)
    await page.get_by_label("API key").fill(key)
    await page.get_by_role("button", name="Log in").click()
    await page.wait_for_url("**/console/dead-letters")


async def shot(page: "Page", path: Path, **options: Any) -> None:
    await page.screenshot(path=str(path), full_page=True, **options)


async def test_workers_page_shows_a_tenant_its_tier_and_an_admin_every_tier(
    browser: "Browser",
    services: tuple[ServiceProcess, ServiceProcess],
    uow_factory: UnitOfWorkFactory,
    screenshots: Path,
) -> None:
    _, admin = services
    base = f"http://127.0.0.1:{admin.port}"
    tenant = await fresh_tenant(uow_factory, tier="premium")
    key, key_admin = await tenant_key(uow_factory, tenant, "carol"), await admin_key(uow_factory, "ops lead")
    await wait_healthy(base)
    context = await browser.new_context(viewport={"width": 1360, "height": 900})
    page = await context.new_page()
    await log_in(page, base, key, None)

    await page.get_by_role("link", name="Workers").click()
    await page.wait_for_url("**/console/workers")
    await expect(page.get_by_role("heading", name="Worker pools")).to_be_visible()
    await expect(page.get_by_text("Workers are shared with other premium tier tenants")).to_be_visible()

    async def reported() -> bool:  # the consumer's first heartbeat (every 2 s) shows the premium workers
        await page.reload()
        cells = await page.locator("tbody tr").first.locator("td").all_inner_texts()
        return cells[4] == str(Settings().tier_workers["premium"])

    await eventually(reported, timeout=30, poll=1.0)
    rows = await page.locator("tbody tr").all_inner_texts()
    assert [row.split("\t")[0] for row in rows] == ["premium"]
    assert "payments.work.premium" in rows[0]
    assert "payments.work.free" not in await page.content()
    assert await page.get_by_role("button", name="Stop premium").count() == 0  # no controls for tenants
    await shot(page, screenshots / "workers.png")
    forged = await page.request.post(f"{base}/console/workers", form={"action": "stop", "tier": "premium"})
    assert forged.status == 403

    await page.get_by_role("button", name="Log out").click()
    await log_in(page, base, key_admin, None)
    await page.goto(f"{base}/console/workers")
    rows = await page.locator("tbody tr").all_inner_texts()
    assert {row.split("\t")[0] for row in rows} >= {"free", "basic", "premium", "enterprise"}
    await page.get_by_role("button", name="Restart free").click()
    await expect(page.get_by_role("heading", name="Restart the free worker pools?")).to_be_visible()
    await page.get_by_role("link", name="Cancel").click()  # the confirmation step: nothing changed
    await page.wait_for_url("**/console/workers")
    await expect(page.get_by_role("row", name="free").get_by_text("running", exact=True)).to_be_visible()
    await shot(page, screenshots / "workers-admin.png")
    await context.close()


OUTAGE = "900000777"  # a creditor account whose bank is down until the outage ends


async def test_batches_payment_trace_and_reconciliation_pages(
    browser: "Browser",
    service_env: ServiceEnv,
    uow_factory: UnitOfWorkFactory,
    tenant_users: TenantUsers,
    logs_dir: Path,
    screenshots: Path,
    tmp_path: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    rows = [
        payment_row(1, amount_cents=150_000),
        payment_row(2, creditor_account=OUTAGE, amount_cents=98_000),  # line 3
        payment_row(3, amount_cents="12.50"),  # line 4: rejected at validation
        payment_row(4, currency="NZD", amount_cents=2_500),
        payment_row(5, amount_cents=50_000),
    ]
    path = write_csv(tmp_path / "anz_20250501.csv", rows)
    batch = await submit_batch(SubmitBatch(tenant, path), uow_factory, Settings())
    outage_ref = rows[1]["payment_reference"]
    accepted_ids = {r.payment_reference: r.message_id for r in await outbox_rows(uow_factory, batch.correlation_id)}
    key, key_admin = await tenant_key(uow_factory, tenant, "carol"), await admin_key(uow_factory, "ops lead")
    in_outage = service_env.env(TEST_CORE_FLAKY_ACCOUNTS=f'{{"{OUTAGE}": 1000}}')
    processes = {
        "consumer": ServiceProcess.consumer(in_outage, logs_dir / "consumer.log"),
        "relay": ServiceProcess.relay(service_env.env(), logs_dir / "relay.log"),
        "archiver": start_archiver(service_env.env(), logs_dir / "archiver.log"),
        "admin": start_admin(service_env.env(), logs_dir / "admin.log"),
    }
    base = f"http://127.0.0.1:{processes['admin'].port}"
    try:
        await wait_for_dead_letters(uow_factory, tenant, 1, timeout=90)
        for reference, message_id in accepted_ids.items():
            if reference != outage_ref:
                await eventually(booked_once(uow_factory, message_id), timeout=60)
        processes["consumer"].stop()  # the outage is over
        processes["consumer"] = ServiceProcess.consumer(service_env.env(), logs_dir / "consumer-after.log")
        await wait_healthy(base)
        context = await browser.new_context(viewport={"width": 1360, "height": 900})
        page = await context.new_page()
        await log_in(page, base, key, None)

        # The batch list, then the batch: per currency, the rejected row, each payment where it is.
        await page.get_by_role("link", name="Batches", exact=True).click()
        await expect(page.get_by_role("link", name=batch.correlation_id)).to_be_visible()
        await shot(page, screenshots / "batches.png")
        await page.get_by_role("link", name=batch.correlation_id).click()
        await expect(page.get_by_role("heading", name=f"Batch {batch.correlation_id}")).to_be_visible()
        await expect(page.locator("#rejections")).to_contain_text("whole number of cents")
        await expect(page.locator("#payments")).to_contain_text("dead-lettered (retries_exhausted)")
        await expect(page.locator("#currencies")).to_contain_text("298,000")  # AUD accepted; NZD on its own row
        await expect(page.get_by_text("100% settled")).to_be_visible()  # 3 processed + 1 dead-lettered of 4
        await shot(page, screenshots / "batch.png")

        # From the batch to the payment's trace, to its dead letter, replayed from the console.
        await page.get_by_role("link", name=f"Trace {outage_ref}").click()
        await expect(page.get_by_text("dead_lettered", exact=True).first).to_be_visible()
        await page.locator("#events").get_by_role("link", name="dead letter").first.click()
        await page.get_by_label("Note for the audit trail").fill("the creditor's bank is back")
        await page.get_by_role("button", name="Preview replay (dry run)").click()
        await page.get_by_role("button", name="Yes, replay").click()
        await expect(page.get_by_role("status")).to_contain_text("replayed: 1")
        [outage] = [
            r for r in await outbox_rows(uow_factory, batch.correlation_id) if r.payment_reference == outage_ref
        ]
        await eventually(booked_once(uow_factory, outage.message_id), timeout=60)

        # Found again by its batch row, through the search form: every stage, the replay included.
        await page.get_by_role("link", name="Find a payment").click()
        await page.get_by_label("Message id, payment reference, or batch id").fill(batch.correlation_id)
        await page.get_by_label("Row of the batch's file").fill("3")
        await page.get_by_role("button", name="Find").click()
        stages = await page.locator("#events tbody tr td:nth-child(4)").all_inner_texts()
        assert stages == [
            "accepted",
            "published",
            *["attempt failed"] * 4,
            "dead lettered",
            "replayed",
            "processed",
        ]
        events = await page.inner_text("#events")
        assert "replayed by carol" in events
        assert "the creditor's bank is back" in events
        assert OUTAGE not in await page.content()  # accounts masked
        await expect(page.get_by_text("033-001 ******777", exact=True)).to_be_visible()
        await shot(page, screenshots / "trace.png")

        # A payment booked with no record of how it was accepted (as one booked before migration 0016, which
        # records a direct publish's source), then the nightly reconciliation: it is a break (money moved,
        # nothing accepted), with its age, and its trace says what the run said. A direct publish with its
        # source recorded reconciles clean (tests/e2e/test_direct_publish_reconciled.py).
        direct = make_wire_dict(tenant_id=tenant, amount_cents=4_200)
        await tenant_users.publisher(tenant).publish(direct)
        await eventually(booked_once(uow_factory, direct["message_id"]), timeout=60)
        await forget_source(service_env, tenant, direct["message_id"])
        reconciled = await reconcile(service_env, tmp_path / "recon")
        assert reconciled.returncode == 2, reconciled.stdout + reconciled.stderr  # breaks found
        assert "export snapshot ..." in reconciled.stderr  # plain progress lines: no terminal here
        assert "reconcile (Spark local[1]): done in" in reconciled.stderr

        await page.get_by_role("link", name="Reconciliation").click()
        await expect(page.get_by_role("heading", name="Reconciliation runs")).to_be_visible()
        await shot(page, screenshots / "reconciliation.png")
        await page.locator("#runs tbody tr").first.get_by_role("link").click()
        breaks = page.locator("#breaks tbody tr")
        assert await breaks.count() == 1  # this tenant's only break: the direct payment
        await expect(breaks.first).to_contain_text("unexpected")
        await expect(breaks.first).to_contain_text(direct["message_id"])
        await shot(page, screenshots / "reconciliation-run.png")
        await breaks.first.get_by_role("link").click()
        await expect(page.get_by_text("BREAK (unexpected)")).to_be_visible()

        await page.get_by_role("button", name="Log out").click()
        await log_in(page, base, key_admin, None)
        await page.goto(f"{base}/console/reconciliation")
        await expect(page.get_by_role("columnheader", name="Result")).to_be_visible()
        await shot(page, screenshots / "reconciliation-admin.png")
        await context.close()
    finally:
        for process in processes.values():
            process.stop()


async def forget_source(env: ServiceEnv, tenant: str, message_id: str) -> None:
    """Clear what the consumer recorded of how a payment was accepted, as the schema owner."""
    owner = await asyncpg.connect(env.database_url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await owner.execute(
            "UPDATE processed_messages SET source = NULL WHERE tenant_id = $1 AND message_id = $2",
            tenant,
            UUID(message_id),
        )
    finally:
        await owner.close()


async def reconcile(env: ServiceEnv, out: Path) -> subprocess.CompletedProcess[str]:
    """`remit reconcile` as the nightly job runs it (a process, no terminal), on one core."""
    args = ["-m", "app.cli", "reconcile", "--as-of", "now", "--out", str(out), "--master", "local[1]"]
    return await asyncio.to_thread(
        subprocess.run, [sys.executable, *args], env=env.env(), cwd=ROOT, capture_output=True, text=True, timeout=600
    )

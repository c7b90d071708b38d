"""The DLQ console in real headless Chromium (Debian's package, driven by Playwright) against the admin
app and the consumer as real processes: a tenant sees only its own dead letters, a replay from the page
(dry-run preview, then confirm) moves the money exactly once, a discard needs a reason and a confirmation,
and the audit trail shows both.

Screenshots go to $REMIT_SCREENSHOTS_DIR (docs/screenshots when regenerating the docs), else a temp dir.
"""

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import admin_key, seed_dead_letter, start_admin, tenant_key, wait_healthy
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.world import fresh_tenant, ledger_count

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
    rows = await page.locator("tbody tr").all_inner_texts()
    assert sorted(row.split("\t")[2] for row in rows) == ["discard", "replay", "replay"]
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

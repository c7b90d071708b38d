"""The console's queues page in real headless Chromium, against the admin app and the consumer as real
processes: a tenant sees its own queue and its own payments in flight; an admin sees every queue, here the
dead-letter queue with three messages waiting (no archiver runs) and the age of the oldest.

Screenshots go to $REMIT_SCREENSHOTS_DIR (docs/screenshots when regenerating the docs), else a temp dir.
"""

import contextlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.e2e.test_console_browser import browser, log_in, screenshots, services, shot  # noqa: F401 - fixtures
from tests.utils.admin import admin_key, tenant_key, wait_healthy
from tests.utils.factories import make_wire_dict, to_wire_bytes
from tests.utils.queues import accept_payments, publish_paced, require_broker_cli
from tests.utils.services import ServiceProcess, eventually
from tests.utils.world import fresh_tenant

with contextlib.suppress(ImportError):  # reported by the browser fixture
    from playwright.async_api import Browser, Page, expect

pytestmark = pytest.mark.e2e


async def cells(page: "Page", table: str) -> list[list[str]]:
    rows = await page.locator(f"#{table} tbody tr").all()
    return [[c.strip() for c in await row.locator("td").all_inner_texts()] for row in rows]


async def test_queues_page_shows_a_tenant_its_own_and_an_admin_everything(
    browser: "Browser",  # noqa: F811
    services: tuple[ServiceProcess, ServiceProcess],  # noqa: F811
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    screenshots: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    require_broker_cli()
    _, admin = services
    base = f"http://127.0.0.1:{admin.port}"
    a, b = await fresh_tenant(uow_factory, tier="premium"), await fresh_tenant(uow_factory, tier="basic")
    await accept_payments(uow_factory, a, 3, tmp_path)  # no relay runs: they stay in flight
    await accept_payments(uow_factory, b, 2, tmp_path)
    key, key_admin = await tenant_key(uow_factory, a, "dana"), await admin_key(uow_factory, "ops lead")
    await wait_healthy(base)
    dead = [to_wire_bytes(make_wire_dict(tenant_id=b)) for _ in range(3)]
    five_minutes_ago = datetime.now(UTC) - timedelta(minutes=5)
    await publish_paced(settings.amqp_url, "payments.dlx", "", dead, 50, five_minutes_ago)  # no archiver runs

    context = await browser.new_context(viewport={"width": 1360, "height": 900})
    page = await context.new_page()
    await log_in(page, base, key, None)
    await page.get_by_role("link", name="Queues").click()
    await page.wait_for_url("**/console/queues")
    await expect(page.get_by_role("heading", name="Queues")).to_be_visible()
    assert [row[0] for row in await cells(page, "queues")] == ["payments.work.premium"]
    assert await cells(page, "tenants") == [[a, "premium", "active", "3", "100,000", "0%"]]
    html = await page.content()
    assert b not in html
    assert "payments.dlq" not in html
    await shot(page, screenshots / "queues.png")

    await page.get_by_role("button", name="Log out").click()
    await log_in(page, base, key_admin, None)

    async def dead_letters_waiting() -> bool:  # the management API's statistics lag by up to 5 s
        await page.goto(f"{base}/console/queues")
        rows = {row[0]: row for row in await cells(page, "queues")}
        premium_pool = rows.get("payments.work.premium", [""] * 8)[4]  # each queue's statistics lag on their own
        return rows.get("payments.dlq", [""] * 8)[2] == "3" and premium_pool == "1"

    await eventually(dead_letters_waiting, timeout=60, poll=1.0)
    rows = {row[0]: row for row in await cells(page, "queues")}
    assert rows["payments.dlq"][1] == "dead-letter"
    assert rows["payments.dlq"][7].startswith("5m")  # the head's timestamp, five minutes ago
    assert {"payments.work.free", "payments.work.enterprise", "payments.retry.200ms"} <= set(rows)
    tenants = {row[0]: row for row in await cells(page, "tenants")}
    assert tenants[a][3] == "3"
    assert tenants[b][3] == "2"
    await shot(page, screenshots / "queues-admin.png")
    await context.close()

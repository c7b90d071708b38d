"""The admin API's /docs page in real headless Chromium with every request off this host refused: Swagger UI
loads from remit's own files, renders the operations, and authorizes with an API key that it then sends."""

import contextlib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from app.storage.unit_of_work import UnitOfWorkFactory
from tests.e2e.test_console_browser import browser  # noqa: F401 - fixture
from tests.utils.admin import start_admin, tenant_key, wait_healthy
from tests.utils.services import ServiceEnv, ServiceProcess
from tests.utils.world import fresh_tenant

with contextlib.suppress(ImportError):  # the browser fixture reports a missing Playwright
    from playwright.async_api import Browser, Route, expect

pytestmark = pytest.mark.e2e


@pytest.fixture
def admin(service_env: ServiceEnv, logs_dir: Path) -> Iterator[ServiceProcess]:
    process = start_admin(service_env.env(), logs_dir / "admin.log")
    yield process
    process.stop()


async def test_the_docs_page_works_without_any_other_host(
    browser: "Browser",  # noqa: F811 - the fixture imported above
    admin: ServiceProcess,
    uow_factory: UnitOfWorkFactory,
) -> None:
    base = f"http://127.0.0.1:{admin.port}"
    key = await tenant_key(uow_factory, await fresh_tenant(uow_factory))
    await wait_healthy(base)
    outside: list[str] = []

    async def local_only(route: "Route") -> None:
        if urlsplit(route.request.url).netloc == f"127.0.0.1:{admin.port}":
            await route.continue_()
        else:
            outside.append(route.request.url)
            await route.abort()

    context = await browser.new_context()
    await context.route("**/*", local_only)
    page = await context.new_page()
    await page.goto(f"{base}/docs")
    await expect(page.get_by_text("remit admin API").first).to_be_visible()
    await expect(page.locator(".opblock-summary-path", has_text="/v1/dead-letters/replay")).to_be_visible()

    await page.get_by_role("button", name="Authorize").click()
    modal = page.locator(".dialog-ux")
    await modal.locator("input[type=text]").last.fill(key)  # the apiKey scheme (X-API-Key)
    await modal.locator("button.modal-btn.authorize").last.click()
    await modal.locator("button.close-modal").click()
    recent = page.locator("#operations-batches-recent_v1_batches_get")
    await recent.locator(".opblock-summary").click()
    await recent.get_by_role("button", name="Try it out").click()
    async with page.expect_request(lambda r: r.url.startswith(f"{base}/v1/batches")) as sent:
        await recent.get_by_role("button", name="Execute").click()
    assert (await sent.value).headers.get("x-api-key") == key
    await expect(recent.locator(".live-responses-table .response-col_status:not(.col_header)").first).to_contain_text(
        "200"
    )
    await context.close()
    assert outside == []

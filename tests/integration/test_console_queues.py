"""The console's queues page, in process: a tenant sees its own queues and its own payments in flight,
nothing of another tenant's; an admin sees every queue (work, delay, dead-letter) and every tenant."""

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from app.admin.api_keys import create_api_key
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import admin_client, log_in
from tests.utils.queues import accept_payments
from tests.utils.world import fresh_tenant

pytestmark = pytest.mark.integration


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_client(settings) as c:
        yield c


def rows(html: str, table: str) -> list[str]:
    body = re.search(rf'<table id="{table}">.*?<tbody>(.*?)</tbody>', html, re.DOTALL)
    assert body is not None, table
    cells = (re.sub(r"<[^>]+>", " ", row) for row in re.findall(r"<tr>(.*?)</tr>", body.group(1), re.DOTALL))
    return [" ".join(text.split()) for text in cells]


async def test_a_tenant_sees_its_queues_and_count_an_admin_sees_all(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    a, b = await fresh_tenant(uow_factory, tier="premium"), await fresh_tenant(uow_factory, tier="basic")
    await accept_payments(uow_factory, a, 3, tmp_path)
    await accept_payments(uow_factory, b, 2, tmp_path)

    await log_in(client, (await create_api_key(uow_factory, a, None)).key)
    page = await client.get("/console/queues")
    assert page.status_code == 200
    assert [row.split()[0] for row in rows(page.text, "queues")] == ["payments.work.premium"]
    assert rows(page.text, "tenants") == [f"{a} premium active 3 100,000 0%"]
    assert b not in page.text
    assert "payments.dlq" not in page.text

    client.cookies.clear()
    await log_in(client, (await create_api_key(uow_factory, None, "ops")).key)
    page = await client.get("/console/queues")
    queues = {row.split()[0]: row for row in rows(page.text, "queues")}
    assert {"payments.work.free", "payments.work.basic", "payments.retry.200ms", "payments.dlq"} <= set(queues)
    assert queues["payments.dlq"].split()[1] == "dead-letter"
    tenants = {row.split()[0]: row for row in rows(page.text, "tenants")}
    assert tenants[a] == f"{a} premium active 3 100,000 0%"
    assert tenants[b] == f"{b} basic active 2 100,000 0%"

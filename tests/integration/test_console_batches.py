"""The console's batch and reconciliation pages, in process on the real database: a tenant sees its own
batches (another's answers 404) with per-currency amounts, rejected rows with their errors and each
payment with a link to its trace; reconciliation runs show a tenant its own breaks only, never the run's
totals; an admin sees every tenant."""

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.publisher.accept import submit_batch
from app.publisher.commands import BatchAccepted, SubmitBatch
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import admin_client, admin_key, log_in, tenant_key
from tests.utils.dead_letters import archive_as_consumer
from tests.utils.factories import make_wire_dict, new_message_id
from tests.utils.reconciliation_runs import recorded_run
from tests.utils.world import fresh_tenant, outbox_rows, payment_row, write_csv

pytestmark = pytest.mark.integration


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_client(settings) as c:
        yield c


async def submitted(uow: UnitOfWorkFactory, tenant: str, path: Path, rows: list[dict[str, Any]]) -> BatchAccepted:
    return await submit_batch(SubmitBatch(tenant, write_csv(path, rows)), uow, Settings())


async def test_a_tenant_sees_its_batches_with_amounts_rejections_and_trace_links(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    rows = [
        payment_row(1, amount_cents=150_000),
        payment_row(2, currency="NZD", amount_cents=2_500),
        payment_row(3, amount_cents="12.50"),
        payment_row(4, amount_cents=50_000),
    ]
    mine = await submitted(uow_factory, a, tmp_path / "anz_20250501.csv", rows)
    theirs = await submitted(uow_factory, b, tmp_path / "westpac.csv", [payment_row(9)])
    await log_in(client, await tenant_key(uow_factory, a))

    listing = await client.get("/console/batches")
    assert listing.status_code == 200
    assert mine.correlation_id in listing.text
    assert theirs.correlation_id not in listing.text
    assert "anz_20250501.csv" in listing.text

    page = await client.get(f"/console/batches/{mine.correlation_id}")
    assert page.status_code == 200
    html = page.text
    assert "200,000" in html  # AUD accepted: 150,000 + 50,000 minor units, never added to the NZD
    assert "2,500" in html
    assert "E+" not in html  # sums come back from PostgreSQL as numeric: shown as whole numbers
    assert "252,500" not in html
    assert "whole number of cents" in html  # the rejected row's error
    assert f"/console/payments?id={mine.correlation_id}&amp;row=4" in html  # line 4 is the rejected row
    for accepted in await outbox_rows(uow_factory, mine.correlation_id):
        assert f"/console/payments?id={accepted.message_id}" in html
    assert "waiting in the outbox" in html  # no relay runs here: nothing published yet
    assert '<meta http-equiv="refresh"' in html  # in flight: the page reloads itself

    assert (await client.get(f"/console/batches/{theirs.correlation_id}")).status_code == 404
    assert (await client.get(f"/console/batches?tenant={b}")).text.count(theirs.correlation_id) == 0

    await log_in(client, await admin_key(uow_factory))
    everyone = (await client.get("/console/batches?limit=500")).text
    assert mine.correlation_id in everyone
    assert theirs.correlation_id in everyone
    only_b = (await client.get(f"/console/batches?tenant={b}")).text
    assert theirs.correlation_id in only_b
    assert mine.correlation_id not in only_b


def a_break(tenant: str, status: str = "missing") -> dict[str, Any]:
    return {
        "message_id": str(new_message_id()),
        "correlation_id": f"bulk_{tenant}_x",
        "tenant_id": tenant,
        "currency": "AUD",
        "status": status,
        "amount_cents": 4_200,
        "detail": "no terminal state; expired 2025-05-01T00:00:00Z",
    }


async def test_reconciliation_pages_show_a_tenant_its_own_breaks_and_an_admin_the_run(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, database_url: str
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    mine, theirs = a_break(a), a_break(b, "unexpected")
    run_id = await recorded_run(database_url, [mine, theirs])
    await log_in(client, await tenant_key(uow_factory, a))

    runs = await client.get("/console/reconciliation")
    assert runs.status_code == 200
    assert f"/console/reconciliation/{run_id}" in runs.text
    assert "Breaks (yours)" in runs.text
    assert "Result" not in runs.text  # a run's totals count other tenants' payments

    page = (await client.get(f"/console/reconciliation/{run_id}")).text
    assert mine["message_id"] in page
    assert theirs["message_id"] not in page
    assert "missing" in page
    assert "1 among your payments" in page
    assert (await client.get("/console/reconciliation/not-a-run")).status_code == 404
    assert (await client.get(f"/console/reconciliation/{new_message_id()}")).status_code == 404

    await log_in(client, await admin_key(uow_factory))
    page = (await client.get(f"/console/reconciliation/{run_id}")).text
    assert mine["message_id"] in page
    assert theirs["message_id"] in page
    assert "Result" in page


async def test_amounts_read_in_the_currencys_unit_beside_the_minor_units(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    """The same 45,050 minor units in currencies of 2, 0 and 3 decimal places (ISO 4217): 450.50 AUD, 45,050 JPY,
    45.050 KWD, each beside its minor units, on the tenant's pages and an operator's (before: '45,050' alone,
    '(minor units)')."""
    tenant = await fresh_tenant(uow_factory)
    rows = [payment_row(n, currency=c, amount_cents=45_050) for n, c in enumerate(("AUD", "JPY", "KWD"))]
    batch = (await submitted(uow_factory, tenant, tmp_path / "three.csv", rows)).correlation_id
    kwd = next(r for r in await outbox_rows(uow_factory, batch) if r.currency == "KWD")
    dead = await archive_as_consumer(uow_factory, make_wire_dict(tenant_id=tenant, currency="KWD", amount_cents=7))
    cells = [
        '<td class="num">450.50 <span class="muted">(45,050 cents)</span></td>',
        '<td class="num">45,050</td>',  # JPY has no minor unit: the yen is the unit
        '<td class="num">45.050 <span class="muted">(45,050 minor units)</span></td>',  # fils
    ]
    for key in (await tenant_key(uow_factory, tenant), await admin_key(uow_factory)):
        await log_in(client, key)
        page = (await client.get(f"/console/batches/{batch}")).text
        assert all(cell in page for cell in cells), page
        traced = (await client.get(f"/console/payments?id={kwd.message_id}&tenant={tenant}")).text
        assert "<dd>45.050 KWD (45,050 minor units)</dd>" in traced
        listed = (await client.get(f"/console/dead-letters?tenant={tenant}")).text
        assert '0.007 <span class="muted">(7 minor units)</span>' in listed  # the list and its value at risk
        assert "0.007 KWD (7 minor units)" in (await client.get(f"/console/dead-letters/{dead}")).text

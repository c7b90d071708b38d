"""A tenant's direct AMQP publishes form a batch under the correlation_id they name, and every one of them counts
there: booked ones as accepted and processed, dead-lettered ones as accepted and dead-lettered, in `remit status` and
in the HTTP batch status alike (issue 37, item 7). On the real consumer, archiver and CLI; the publisher logs in as the
tenant's own RabbitMQ user."""

import re
from pathlib import Path

import pytest
from sqlalchemy import update

from app.settings import Settings
from app.storage.tables import dead_letters
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import admin_client, admin_key, bearer, log_in, tenant_key
from tests.utils.cli import remit
from tests.utils.dead_letters import archive_as_consumer, start_archiver, wait_for_dead_letters
from tests.utils.factories import make_wire_dict
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import booked_once, fresh_tenant

pytestmark = pytest.mark.integration


def status_cells(output: str, batch: str) -> list[str]:
    """The cells of `remit status`'s row of the batch."""
    row = next(line for line in output.splitlines() if batch in line)
    return [cell.strip() for cell in re.split(r"[│┃|]", row) if cell.strip()]


async def test_a_direct_publishers_dead_lettered_payments_count_in_its_batch(
    service_env: ServiceEnv,
    settings: Settings,
    uow_factory: UnitOfWorkFactory,
    consumer: ServiceProcess,
    tenant_users: TenantUsers,
    logs_dir: Path,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    batch = f"direct_{tenant}_0001"
    good = make_wire_dict(tenant_id=tenant, correlation_id=batch, amount_cents=12_345)
    # debtor = creditor: the consumer's own rules dead-letter it `invalid` at once
    same = {"creditor_bsb": "012-345", "creditor_account": "123456789"}
    bad = [make_wire_dict(tenant_id=tenant, correlation_id=batch, amount_cents=cents, **same) for cents in (700, 900)]
    archiver = start_archiver(service_env.env(), logs_dir / "archiver.log")
    try:
        publisher = tenant_users.publisher(tenant)
        for wire in (good, *bad):
            await publisher.publish(wire)
        await eventually(booked_once(uow_factory, good["message_id"]), timeout=60)
        stored = await wait_for_dead_letters(uow_factory, tenant, 2, timeout=60)
    finally:
        archiver.stop()
    assert {str(d.message_id) for d in stored} == {w["message_id"] for w in bad}

    # tenant, batch, cur, accepted, cents, rejected, processed, cents, dead-lettered, in flight, over amqp
    code, out = await remit(service_env.env(COLUMNS="250"), "status", "--batch", batch)
    assert code == 0, out
    # Amounts in the currency's unit beside the minor units (app/cli/listing.py, contracts/amounts.py).
    cells = ["3", "139.45 (13,945)", "0", "1", "123.45 (12,345)", "2", "0", "3"]
    assert status_cells(out, batch) == [tenant, batch, "AUD", *cells], out
    code, out = await remit(service_env.env(COLUMNS="250"), "status", "--tenant", tenant)  # among its latest
    assert status_cells(out, batch)[3:] == cells, out

    expected = {
        "currency": "AUD",
        "accepted": 3,
        "accepted_cents": 13_945,
        "rejected": 0,
        "rejected_cents": 0,
        "processed": 1,
        "processed_cents": 12_345,
        "dead_lettered": 2,
        "dead_lettered_cents": 1_600,
        "in_flight": 0,
    }
    async with admin_client(settings) as client:
        for key in (await tenant_key(uow_factory, tenant), await admin_key(uow_factory)):
            response = await client.get(f"/v1/batches/{batch}", headers=bearer(key))
            assert response.status_code == 200, response.text
            assert response.json() == {
                "correlation_id": batch,
                "tenant_id": tenant,
                "settled": True,
                "currencies": [expected],
            }
            listed = await client.get(f"/v1/batches?tenant={tenant}", headers=bearer(key))
            assert batch in listed.json()["batches"], listed.text
        other = await tenant_key(uow_factory, await fresh_tenant(uow_factory))
        assert (await client.get(f"/v1/batches/{batch}", headers=bearer(other))).status_code == 404

    async with admin_client(settings) as console:  # the console, as the tenant: listed, and the batch in full
        await log_in(console, await tenant_key(uow_factory, tenant))
        listing = (await console.get("/console/batches")).text
        assert batch in listing
        assert "direct AMQP publishes" in listing
        page = await console.get(f"/console/batches/{batch}")
        assert page.status_code == 200, page.text
        assert "1 processed, 2 dead-lettered, 0 in flight of 3 accepted" in page.text
        assert page.text.count("dead-lettered (invalid)") == 2
        assert good["payment_reference"] in page.text
        assert all(w["payment_reference"] in page.text for w in bad)

    async with admin_client(settings) as client:
        # One of them replayed (its dead letter no longer open, no booking yet): in flight again, not lost.
        async with uow_factory() as uow:
            replayed = dead_letters.c.message_id == bad[0]["message_id"]
            await uow.connection.execute(update(dead_letters).where(replayed).values(status="replayed"))
            await uow.commit()
        response = await client.get(f"/v1/batches/{batch}", headers=bearer(await tenant_key(uow_factory, tenant)))
        [currency] = response.json()["currencies"]
        assert (currency["accepted"], currency["dead_lettered"], currency["in_flight"]) == (3, 1, 1)
        assert response.json()["settled"] is False


async def test_a_batch_id_two_tenants_direct_publishes_name_is_each_tenants_own(
    settings: Settings, uow_factory: UnitOfWorkFactory
) -> None:
    """A batch is its correlation_id within its tenant: each tenant sees its own; an admin names the tenant."""
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    batch = f"direct_shared_{a}"
    for tenant, cents in ((a, 100), (b, 250)):
        await archive_as_consumer(
            uow_factory, make_wire_dict(tenant_id=tenant, correlation_id=batch, amount_cents=cents)
        )
    async with admin_client(settings) as client:
        for tenant, cents in ((a, 100), (b, 250)):
            own = await client.get(f"/v1/batches/{batch}", headers=bearer(await tenant_key(uow_factory, tenant)))
            assert own.status_code == 200, own.text
            assert own.json()["tenant_id"] == tenant
            assert [
                (c["accepted"], c["dead_lettered"], c["dead_lettered_cents"]) for c in own.json()["currencies"]
            ] == [(1, 1, cents)]
        admin = bearer(await admin_key(uow_factory))
        ambiguous = await client.get(f"/v1/batches/{batch}", headers=admin)
        assert ambiguous.status_code == 409, ambiguous.text
        assert f"({a}, {b})" in ambiguous.json()["detail"] or f"({b}, {a})" in ambiguous.json()["detail"]
        named = await client.get(f"/v1/batches/{batch}?tenant={b}", headers=admin)
        assert (named.json()["tenant_id"], named.json()["currencies"][0]["dead_lettered_cents"]) == (b, 250)

        await log_in(client, await admin_key(uow_factory))  # the console: one row per tenant, each linked by tenant
        listing = (await client.get(f"/console/batches?tenant={b}")).text
        assert f"/console/batches/{batch}?tenant={b}" in listing
        assert (await client.get(f"/console/batches/{batch}")).status_code == 404
        page = await client.get(f"/console/batches/{batch}?tenant={b}")
        assert "0 processed, 1 dead-lettered, 0 in flight of 1 accepted" in page.text

"""Batch ingress over HTTP: the tenant comes from the API key only; whole-batch refusals are 422; the
status of a batch is visible to its own tenant (and the admin) only."""

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select, update

from app.admin.config import AdminSettings
from app.settings import Settings
from app.storage.tables import batches, tenants
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import admin_client, admin_key, bearer, tenant_key
from tests.utils.world import fresh_tenant, outbox_rows, payment_row, write_csv

pytestmark = pytest.mark.integration

MAX_UPLOAD = 64 * 1024


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_client(settings, AdminSettings(max_upload_bytes=MAX_UPLOAD)) as c:
        yield c


def csv_bytes(tmp_path: Path, rows: list[dict[str, object]]) -> bytes:
    return write_csv(tmp_path / "rows.csv", rows).read_bytes()


async def test_the_tenant_comes_from_the_key_whatever_the_request_claims(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    data = csv_bytes(tmp_path, [payment_row(1), payment_row(2, currency="NZD", amount_cents=500)])
    response = await client.post(
        f"/v1/batches?tenant_id={b}&tenant={b}",
        headers={**bearer(await tenant_key(uow_factory, a)), "X-Tenant-Id": b, "tenantUUID": b},
        files={"file": ("anz_20250501.csv", data, "text/csv")},
        data={"tenant_id": b, "tenant": b},
    )
    assert response.status_code == 201, response.text
    receipt = response.json()
    assert receipt["tenant_id"] == a
    assert receipt["accepted"] == 2
    assert receipt["totals"] == [
        {"currency": "AUD", "count": 1, "amount_cents": 1001},
        {"currency": "NZD", "count": 1, "amount_cents": 500},
    ]
    rows = await outbox_rows(uow_factory, receipt["correlation_id"])
    assert {r.tenant_id for r in rows} == {a}
    assert all(json.loads(r.body)["tenant_id"] == a for r in rows)
    async with uow_factory() as uow:
        query = select(batches.c.tenant_id, batches.c.source_name).where(
            batches.c.correlation_id == receipt["correlation_id"]
        )
        assert (await uow.connection.execute(query)).one() == (a, "anz_20250501.csv")

    # A JSON Lines row naming another tenant is rejected (unknown column); the others are a's.
    lines = [dict(payment_row(3), tenant_id=b), payment_row(4)]
    raw = await client.post(
        "/v1/batches?filename=wp.jsonl",
        headers={**bearer(await tenant_key(uow_factory, a)), "Content-Type": "application/x-ndjson"},
        content="".join(json.dumps(line) + "\n" for line in lines).encode(),
    )
    assert raw.status_code == 201, raw.text
    assert (raw.json()["tenant_id"], raw.json()["accepted"], raw.json()["rejected_count"]) == (a, 1, 1)
    assert "unknown column(s): tenant_id" in raw.json()["rejected"][0]["errors"][0]


async def test_rejected_rows_come_back_with_their_reasons(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    good, bad = payment_row(1), payment_row(2, amount_cents="12.50")
    response = await client.post(
        "/v1/batches",
        headers={**bearer(await tenant_key(uow_factory, tenant)), "Content-Type": "text/csv"},
        content=csv_bytes(tmp_path, [good, bad]),
    )
    assert response.status_code == 201
    receipt = response.json()
    assert (receipt["accepted"], receipt["rejected_count"]) == (1, 1)
    [rejected] = receipt["rejected"]
    assert rejected["row_number"] == 3
    assert rejected["payment_reference"] == bad["payment_reference"]
    assert "whole number of cents" in " ".join(rejected["errors"])


async def test_a_refused_batch_is_422_and_accepts_nothing(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    headers = {**bearer(await tenant_key(uow_factory, tenant)), "Content-Type": "text/csv"}
    data = csv_bytes(tmp_path, [payment_row(1)])
    assert (await client.post("/v1/batches", headers=headers, content=data)).status_code == 201

    duplicate = await client.post("/v1/batches", headers=headers, content=data)
    assert duplicate.status_code == 422
    assert "already submitted" in duplicate.json()["detail"]

    invalid = await client.post(
        "/v1/batches", headers=headers, content=csv_bytes(tmp_path, [payment_row(2, currency="XXX")])
    )
    assert invalid.status_code == 422
    assert "no valid payment" in invalid.json()["detail"]

    async with uow_factory() as uow:
        await uow.connection.execute(update(tenants).where(tenants.c.tenant_id == tenant).values(status="suspended"))
        await uow.commit()
    suspended = await client.post("/v1/batches", headers=headers, content=csv_bytes(tmp_path, [payment_row(3)]))
    assert suspended.status_code == 422
    assert "suspended" in suspended.json()["detail"]


async def test_unsupported_and_oversized_uploads_are_refused(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    tenant = await fresh_tenant(uow_factory)
    key = bearer(await tenant_key(uow_factory, tenant))
    wrong = await client.post("/v1/batches", headers={**key, "Content-Type": "application/json"}, content=b"{}")
    assert wrong.status_code == 415
    big = b"payment_reference\n" + b"x" * MAX_UPLOAD
    assert (
        await client.post("/v1/batches", headers={**key, "Content-Type": "text/csv"}, content=big)
    ).status_code == 413
    multipart_big = await client.post("/v1/batches", headers=key, files={"file": ("big.csv", big, "text/csv")})
    assert multipart_big.status_code == 413
    no_file = await client.post("/v1/batches", headers=key, files={"other": ("a.csv", b"x", "text/csv")})
    assert no_file.status_code == 422


async def test_batch_status_is_scoped_to_the_batchs_tenant(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    as_a, as_b = bearer(await tenant_key(uow_factory, a)), bearer(await tenant_key(uow_factory, b))
    submitted = await client.post(
        "/v1/batches", headers={**as_a, "Content-Type": "text/csv"}, content=csv_bytes(tmp_path, [payment_row(1)])
    )
    batch = submitted.json()["correlation_id"]

    status = (await client.get(f"/v1/batches/{batch}", headers=as_a)).json()
    assert status["tenant_id"] == a
    assert status["settled"] is False  # nothing consumes it in this test
    assert status["currencies"] == [
        {
            "currency": "AUD",
            "accepted": 1,
            "accepted_cents": 1001,
            "rejected": 0,
            "rejected_cents": 0,
            "processed": 0,
            "processed_cents": 0,
            "dead_lettered": 0,
            "dead_lettered_cents": 0,
            "in_flight": 1,
        }
    ]
    assert (await client.get(f"/v1/batches/{batch}", headers=as_b)).status_code == 404
    assert (await client.get("/v1/batches/no_such_batch", headers=as_a)).status_code == 404
    assert batch in (await client.get("/v1/batches", headers=as_a)).json()["batches"]
    assert batch not in (await client.get("/v1/batches", headers=as_b)).json()["batches"]
    as_admin = bearer(await admin_key(uow_factory))
    assert (await client.get(f"/v1/batches/{batch}", headers=as_admin)).json()["tenant_id"] == a

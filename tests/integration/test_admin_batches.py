"""Batch ingress over HTTP: the tenant comes from the API key only; whole-batch refusals are 422; the
status of a batch is visible to its own tenant (and the admin) only."""

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select, update

from app.settings import Settings
from app.storage.tables import batches, tenants
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import admin_client, admin_key, bearer, tenant_key
from tests.utils.world import fresh_tenant, outbox_rows, payment_row, write_csv

pytestmark = pytest.mark.integration

MAX_UPLOAD = 64 * 1024


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_client(settings.model_copy(update={"admin_max_upload_bytes": MAX_UPLOAD})) as c:
        yield c


def csv_bytes(tmp_path: Path, rows: list[dict[str, object]]) -> bytes:
    return write_csv(tmp_path / "rows.csv", rows).read_bytes()


async def test_the_tenant_comes_from_the_key_whatever_the_request_claims(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    data = csv_bytes(tmp_path, [payment_row(1), payment_row(2, currency="NZD", amount_cents=500)])
    claims = {"headers": {**bearer(await tenant_key(uow_factory, a)), "X-Tenant-Id": b, "tenantUUID": b}}
    upload = {"files": {"file": ("anz_20250501.csv", data, "text/csv")}, "data": {"tenant_id": b, "tenant": b}}
    # A query parameter the route does not take is refused whole (nothing accepted), not ignored.
    in_query = await client.post(f"/v1/batches?tenant_id={b}&tenant={b}", **claims, **upload)  # type: ignore[arg-type]
    assert in_query.status_code == 422, in_query.text
    assert [e["location"] for e in in_query.json()["errors"]] == [["query", "tenant"], ["query", "tenant_id"]]
    response = await client.post("/v1/batches", **claims, **upload)  # type: ignore[arg-type]
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


async def test_a_batch_over_the_tenants_rate_is_429_with_when_to_retry(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    async with uow_factory() as uow:
        limited = update(tenants).where(tenants.c.tenant_id == tenant).values(publish_rate_per_second=1)
        await uow.connection.execute(limited)  # a bucket of 60 payments, refilled at 1/s
        await uow.commit()
    headers = {**bearer(await tenant_key(uow_factory, tenant)), "Content-Type": "text/csv"}
    first = csv_bytes(tmp_path, [payment_row(n) for n in range(50)])
    assert (await client.post("/v1/batches", headers=headers, content=first)).status_code == 201
    over = await client.post(
        "/v1/batches", headers=headers, content=csv_bytes(tmp_path, [payment_row(100 + n) for n in range(30)])
    )
    assert over.status_code == 429
    assert "over its publish rate" in over.json()["detail"]
    assert 15 <= int(over.headers["Retry-After"]) <= 25  # 20 more tokens at 1/s


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


EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.mark.parametrize(
    ("name", "media_type", "source_format", "accepted", "rejected"),
    [
        ("acme_20250501.pain.001.001.09.xml", "application/xml", "pain.001.001.09", 35, 7),
        ("globex_20250501.pain.001.001.03.xml", "text/xml", "pain.001.001.03", 22, 3),
        ("initech_20250501.aba", "text/plain", "aba", 28, 5),
        ("initech_20250501.aba", "application/octet-stream", "aba", 28, 5),
    ],
)
async def test_every_bank_format_as_a_raw_body(
    client: httpx.AsyncClient,
    uow_factory: UnitOfWorkFactory,
    name: str,
    media_type: str,
    source_format: str,
    accepted: int,
    rejected: int,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    response = await client.post(
        f"/v1/batches?filename={name}",
        headers={**bearer(await tenant_key(uow_factory, tenant)), "Content-Type": media_type},
        content=(EXAMPLES / name).read_bytes(),
    )
    assert response.status_code == 201, response.text
    receipt = response.json()
    assert (receipt["source_format"], receipt["accepted"], receipt["rejected_count"]) == (
        source_format,
        accepted,
        rejected,
    )
    async with uow_factory() as uow:
        query = select(batches.c.source_name).where(batches.c.correlation_id == receipt["correlation_id"])
        assert (await uow.connection.execute(query)).scalar_one() == name


async def test_multipart_is_read_by_content_or_as_the_format_named(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    key = bearer(await tenant_key(uow_factory, tenant))
    pain = (EXAMPLES / "acme_20250501.pain.001.001.09.xml").read_bytes()
    by_content = await client.post("/v1/batches", headers=key, files={"file": ("acme.csv", pain, "text/csv")})
    assert by_content.status_code == 201, by_content.text
    assert by_content.json()["source_format"] == "pain.001.001.09"  # neither the name nor the part's type counts

    csv_rows = csv_bytes(tmp_path, [payment_row(1)])
    named = await client.post(
        "/v1/batches", headers=key, files={"file": ("rows.txt", csv_rows, "text/plain")}, data={"format": "CSV"}
    )
    assert (named.status_code, named.json()["source_format"]) == (201, "csv")


async def test_unknown_formats_and_unreadable_files_are_refused_with_the_formats_remit_reads(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    tenant = await fresh_tenant(uow_factory)
    key = bearer(await tenant_key(uow_factory, tenant))
    named = await client.post(
        "/v1/batches?format=mt940", headers={**key, "Content-Type": "text/plain"}, content=b"0,1\n"
    )
    assert named.status_code == 422
    assert named.json()["detail"] == (
        "unknown format 'mt940': remit reads csv, jsonl, pain.001.001.09, pain.001.001.03, aba"
    )
    letter = await client.post(
        "/v1/batches?filename=letter.txt", headers={**key, "Content-Type": "text/plain"}, content=b"Dear bank\n"
    )
    assert letter.status_code == 422
    assert "cannot tell the format of letter.txt from its content: remit reads csv, jsonl" in letter.json()["detail"]
    wrong_type = await client.post("/v1/batches", headers={**key, "Content-Type": "image/png"}, content=b"\x89PNG")
    assert wrong_type.status_code == 415
    assert "application/xml" in wrong_type.json()["detail"]


async def test_twenty_uploads_at_the_same_moment_are_all_accepted(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    # Before: the batch id was a count of the day's batches plus one: all but one upload got a 500 (pk_batches).
    tenant = await fresh_tenant(uow_factory)
    headers = {**bearer(await tenant_key(uow_factory, tenant)), "Content-Type": "text/csv"}
    bodies = [csv_bytes(tmp_path, [payment_row(n) for n in range(10)]) for _ in range(20)]
    responses = await asyncio.gather(*(client.post("/v1/batches", headers=headers, content=b) for b in bodies))
    assert [r.status_code for r in responses] == [201] * 20
    assert len({r.json()["correlation_id"] for r in responses}) == 20

"""A number with more digits than any amount needs (5,000: past Python's 4,300-digit limit on int()) is one
row's problem with its reason, in every format remit reads, and a direct publisher's message carrying one is a
dead letter with its reason: never a 500, a traceback or a consumer that stops.

Before (issue 36, item 3): `POST /v1/batches` answered 500 `internal_error` for a CSV or JSON Lines file with
such an amount (the CSV row was rejected, then its rejection's amount was converted again, unguarded; json
raised ValueError, not JSONDecodeError), and `remit submit` printed a traceback; a pain.001 with such an NbOfTxs
was the same 500."""

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aio_pika.abc import AbstractChannel

from app.messaging import headers
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import admin_client, bearer, tenant_key
from tests.utils.bankfile_writers import PAIN_001_09, AbaDetail, AbaFile, Tx, pain001
from tests.utils.cli import remit
from tests.utils.factories import make_wire_dict
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import booked_once, dead_letters, fresh_tenant, payment_row, write_csv, write_jsonl

pytestmark = pytest.mark.integration

HUGE = "1" * 5_000


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_client(settings) as c:
        yield c


async def upload(client: httpx.AsyncClient, uow: UnitOfWorkFactory, body: bytes, media_type: str) -> httpx.Response:
    tenant = await fresh_tenant(uow)
    headers = {**bearer(await tenant_key(uow, tenant)), "Content-Type": media_type}
    return await client.post("/v1/batches", headers=headers, content=body)


def rejected_rows(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 201, response.text[:2_000]
    rows: list[dict[str, Any]] = response.json()["rejected"]
    return rows


async def test_a_csv_amount_of_5000_digits_is_one_rejected_row(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    path = write_csv(tmp_path / "huge.csv", [payment_row(1), payment_row(2, amount_cents=HUGE)])
    response = await upload(client, uow_factory, path.read_bytes(), "text/csv")
    [row] = rejected_rows(response)
    assert response.json()["accepted"] == 1
    assert row["row_number"] == 3
    assert row["amount_cents"] is None
    [error] = row["errors"]
    assert "amount_cents has 5000 digits; a number in a bank file has at most 18" in error, error
    assert len(error) < 200, error  # the digits are not echoed back


async def test_a_json_lines_amount_of_5000_digits_is_one_rejected_row(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    good = json.dumps(payment_row(1))
    huge = json.dumps(payment_row(2, amount_cents=0)).replace('"amount_cents": 0', f'"amount_cents": {HUGE}')
    response = await upload(client, uow_factory, f"{good}\n{huge}\n".encode(), "application/x-ndjson")
    [row] = rejected_rows(response)
    assert (response.json()["accepted"], row["row_number"], row["amount_cents"]) == (1, 2, None)
    [error] = row["errors"]
    assert "amount_cents has 5000 digits; a number in a bank file has at most 18" in error, error
    assert len(error) < 200, error


async def test_json_lines_numbers_just_inside_and_outside_the_bound(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    """18 digits are read and judged by the contract (over its maximum amount); 19 are refused unread."""
    lines = [
        json.dumps(payment_row(1)),
        json.dumps(payment_row(2, amount_cents=int("9" * 18))),
        json.dumps(payment_row(3, amount_cents=int("9" * 19))),
        json.dumps(payment_row(4, amount_cents=-int("9" * 19))),
    ]
    response = await upload(client, uow_factory, ("\n".join(lines) + "\n").encode(), "application/x-ndjson")
    eighteen, nineteen, negative = rejected_rows(response)
    assert "less than or equal to 100000000000000" in eighteen["errors"][0], eighteen
    assert "amount_cents has 19 digits" in nineteen["errors"][0], nineteen
    assert nineteen["payment_reference"] is not None  # the row still says which payment it was
    assert "amount_cents has 19 digits" in negative["errors"][0], negative
    # A control record is the file's stated totals: one that cannot be read refuses the file (issue 37, item 1).
    control = {"record_type": "control", "currency": "AUD", "control_count": int("9" * 19), "amount_cents": 1}
    body = f"{json.dumps(payment_row(1))}\n{json.dumps(control)}\n".encode()
    response = await upload(client, uow_factory, body, "application/x-ndjson")
    assert response.status_code == 422, response.text[:2_000]
    assert "control_count has 19 digits" in response.text, response.text[:2_000]
    assert "9" * 19 not in response.text


async def test_csv_amounts_at_the_bound(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    """Leading zeros are not digits of the amount; 18 digits are read, 19 are not."""
    rows = [
        payment_row(1, amount_cents="0" * 30 + "1500"),
        payment_row(2, amount_cents="9" * 18),
        payment_row(3, amount_cents="1" + "0" * 18),
        payment_row(4, amount_cents="12x" + "9" * 100),
    ]
    response = await upload(client, uow_factory, write_csv(tmp_path / "b.csv", rows).read_bytes(), "text/csv")
    eighteen, nineteen, not_digits = rejected_rows(response)
    assert response.json()["totals"] == [{"currency": "AUD", "count": 1, "amount_cents": 1500}]
    assert "less than or equal to 100000000000000" in eighteen["errors"][0], eighteen
    assert "amount_cents has 19 digits" in nineteen["errors"][0], nineteen
    assert "whole number of cents, got '12x999999999999999999999'" in not_digits["errors"][0], not_digits


async def test_pain001_numbers_of_5000_digits_refuse_the_file_by_its_schema(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    """The schema bounds every number of a pain.001 (an amount's totalDigits 18, NbOfTxs Max15NumericText), so
    a file holding a longer one does not conform and is refused whole, saying where (values masked)."""
    files = {
        "InstdAmt": pain001(PAIN_001_09, [Tx("E2E-1", "10.00"), Tx("E2E-2", HUGE)], control_sum="10.00"),
        "NbOfTxs": pain001(PAIN_001_09, [Tx("E2E-1", "10.00")], message_id="MSG-COUNT", count=HUGE),
        "CtrlSum": pain001(PAIN_001_09, [Tx("E2E-1", "10.00")], message_id="MSG-SUM", control_sum=HUGE),
    }
    for element, file in files.items():
        response = await upload(client, uow_factory, file, "application/xml")
        assert response.status_code == 422, (element, response.text[:2_000])
        assert response.json()["code"] == "file_refused", response.text[:2_000]
        assert "does not conform to the pain.001.001.09 schema" in response.text, response.text[:2_000]
        assert HUGE[:100] not in response.text


async def test_an_aba_line_of_digits_is_one_rejected_row(
    client: httpx.AsyncClient, uow_factory: UnitOfWorkFactory
) -> None:
    good = AbaDetail("062-000", "12345678", 1_000, "INV-1")
    aba = AbaFile([good, AbaDetail("062-000", "12345678", 2_000, "INV-2")])
    text = aba.text(credits=3_000).replace(AbaDetail("062-000", "12345678", 2_000, "INV-2").record(), "1" + HUGE)
    response = await upload(client, uow_factory, text.encode(), "application/octet-stream")
    assert response.status_code in (201, 422), response.text[:2_000]
    assert HUGE[:100] not in response.text


async def test_remit_submit_rejects_the_row_without_a_traceback(
    service_env: ServiceEnv, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    for path in (
        write_csv(tmp_path / "huge.csv", [payment_row(1), payment_row(2, amount_cents=HUGE)]),
        write_jsonl(tmp_path / "huge.jsonl", [payment_row(3)]),
    ):
        if path.suffix == ".jsonl":
            path.write_text(path.read_text() + f'{{"payment_reference": "HUGE-1", "amount_cents": {HUGE}}}\n')
        code, out = await remit(service_env.env(COLUMNS="200"), "submit", str(path), "--tenant", tenant)
        assert code == 1, out[-3_000:]
        assert "Traceback" not in out, out[-3_000:]
        assert "1 accepted, 1 rejected" in out, out[-3_000:]
        assert "5000 digits" in out, out[-3_000:]


async def test_a_direct_publishers_amount_of_5000_digits_is_a_dead_letter_with_its_reason(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    consumer: ServiceProcess,
    tenant_users: TenantUsers,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant, amount_cents=0)
    body = json.dumps(wire).replace('"amount_cents": 0', f'"amount_cents": {HUGE}').encode()
    publisher = tenant_users.publisher(tenant)
    await publisher.publish_bytes(body, message_id=str(wire["message_id"]))
    healthy = make_wire_dict(tenant_id=tenant)
    await publisher.publish(healthy)  # the consumer goes on: the next message is processed

    [dead] = await dead_letters(channel, settings, 1)
    assert dead.headers[headers.REASON] == "invalid"
    assert "number out of range" in str(dead.headers[headers.ERROR_MESSAGE])
    assert HUGE[:100] not in str(dead.headers[headers.ERROR_MESSAGE])
    await eventually(booked_once(uow_factory, healthy["message_id"]), timeout=30)
    assert "Traceback" not in consumer.log()

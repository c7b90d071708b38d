"""A file whose columns are not remit's is refused with the missing, the unexpected and the expected columns
named: `remit submit` (exit 2) and POST /v1/batches (422) alike, CSV by its header, JSON Lines by its keys."""

import json
from pathlib import Path

import pytest

from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.admin import admin_client, bearer, tenant_key
from tests.utils.cli import remit
from tests.utils.services import ServiceEnv
from tests.utils.world import fresh_tenant, payment_row

pytestmark = pytest.mark.integration

EXPECTED = (
    "The columns are: payment_reference, amount_cents, currency, debtor_bsb, debtor_account, creditor_bsb, "
    "creditor_account (and, for control records, record_type and control_count)"
)


def misnamed_csv(path: Path) -> Path:
    """`amount` for amount_cents and `ccy` for currency, as another bank's export might name them."""
    row = payment_row(1)
    path.write_text(
        "payment_reference,amount,ccy,debtor_bsb,debtor_account,creditor_bsb,creditor_account\n"
        f"{row['payment_reference']},1500,AUD,012-345,100000001,033-001,900000001\n"
    )
    return path


def one_line(text: str) -> str:
    return " ".join(text.split())


async def test_submit_names_the_missing_unexpected_and_expected_csv_columns(
    service_env: ServiceEnv, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    code, out = await remit(service_env.env(), "submit", str(misnamed_csv(tmp_path / "b.csv")), "--tenant", tenant)
    assert code == 2, out
    assert "the CSV header is wrong: missing amount_cents, currency; unexpected amount, ccy." in one_line(out)
    assert EXPECTED in one_line(out)


async def test_http_ingress_names_them_too_for_csv_and_json_lines(
    settings: Settings, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    key = bearer(await tenant_key(uow_factory, tenant))
    async with admin_client(settings) as client:
        response = await client.post(
            "/v1/batches",
            headers={**key, "Content-Type": "text/csv"},
            content=misnamed_csv(tmp_path / "b.csv").read_bytes(),
        )
        assert response.status_code == 422, response.text
        detail = response.json()["detail"]
        assert "missing amount_cents, currency; unexpected amount, ccy." in detail
        assert EXPECTED in detail

        row = payment_row(2)
        row["amount"] = row.pop("amount_cents")
        response = await client.post(
            "/v1/batches", headers={**key, "Content-Type": "application/x-ndjson"}, content=json.dumps(row) + "\n"
        )
        assert response.status_code == 422, response.text
        detail = response.json()["detail"]
        assert "no valid payment in the file (1 rejected rows; line 1: unknown column(s): amount; " in detail
        assert EXPECTED.replace("The columns", "the columns") in detail

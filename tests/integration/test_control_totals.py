"""A bank file's own control totals are enforced the same way in every format that carries them: a file whose
totals disagree with its rows is refused whole (nothing of it accepted, no batch left behind), and the refusal
names what the file says and what its rows hold, in the same words for CSV, JSON Lines, pain.001 and ABA.

Before (issue 37, item 1): a CSV whose control record said 5 payments / 9,999 cents over 2 rows / 3,000 cents
was accepted (`remit submit` exit 0) and the money moved; JSON Lines control records were not checked either.
pain.001's NbOfTxs/CtrlSum and ABA's file total were enforced, each in words of its own."""

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from app.errors import FileRefused
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.tables import batch_totals, batches, outbox
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.bankfile_writers import PAIN_001_09, AbaDetail, AbaFile, Tx, pain001
from tests.utils.cli import remit
from tests.utils.services import ServiceEnv
from tests.utils.world import COLUMNS, fresh_tenant, payment_row

pytestmark = pytest.mark.integration

# The one wording every format's refusal starts with, after the file's name.
DISAGREE = "its control totals disagree with its rows, so nothing of it was accepted: "


def control(currency: str, count: int, cents: int) -> dict[str, Any]:
    return {"record_type": "control", "currency": currency, "control_count": count, "amount_cents": cents}


def write_csv_with_controls(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[*COLUMNS, "record_type", "control_count"])
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


async def left_behind(uow: UnitOfWorkFactory, tenant: str) -> tuple[int, int]:
    """The tenant's batches and outbox rows: a refused file leaves neither."""
    async with uow(tenant) as u:
        conn = u.connection
        n_batches = (await conn.execute(select(func.count()).where(batches.c.tenant_id == tenant))).scalar_one()
        n_outbox = (await conn.execute(select(func.count()).where(outbox.c.tenant_id == tenant))).scalar_one()
    return n_batches, n_outbox


async def refused(uow: UnitOfWorkFactory, tenant: str, path: Path) -> FileRefused:
    with pytest.raises(FileRefused) as caught:
        await submit_batch(SubmitBatch(tenant, path), uow, Settings())
    assert await left_behind(uow, tenant) == (0, 0)
    return caught.value


def lying_rows() -> list[dict[str, Any]]:
    """The issue's file: two payments of 3,000 cents in all, a control record saying 5 payments of 9,999."""
    return [payment_row(1, amount_cents=1000), payment_row(2, amount_cents=2000), control("AUD", 5, 9999)]


async def test_a_csv_whose_control_record_lies_is_refused_whole_by_remit_submit(
    service_env: ServiceEnv, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    path = write_csv_with_controls(tmp_path / "lying.csv", lying_rows())
    code, out = await remit(service_env.env(), "submit", str(path), "--tenant", tenant)
    assert code == 2, out
    said = " ".join(out.split())
    assert f"lying.csv: {DISAGREE}the control record on line 4 says 5 AUD payments of 9999 cents; " in said
    assert "the file has 2 AUD payments of 3000 cents" in said
    assert await left_behind(uow_factory, tenant) == (0, 0)


async def test_a_csv_whose_control_record_is_true_is_accepted_and_its_totals_kept(
    uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    rows = [payment_row(1, amount_cents=1000), payment_row(2, amount_cents=2000), control("AUD", 2, 3000)]
    result = await submit_batch(
        SubmitBatch(tenant, write_csv_with_controls(tmp_path / "ok.csv", rows)), uow_factory, Settings()
    )
    assert (result.accepted, result.rejected_count) == (2, 0)
    async with uow_factory(tenant) as u:
        kept = (await u.connection.execute(select(batch_totals).where(batch_totals.c.tenant_id == tenant))).one()
    assert (kept.control_count, kept.control_cents, kept.accepted_count, kept.accepted_cents) == (2, 3000, 2, 3000)


async def test_the_control_total_counts_every_row_of_its_currency_rejected_ones_too(
    uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    """As pain.001 and ABA do: the file's totals describe the file as written. A rejected row counts (its amount
    when it can be read); the stated totals then do not describe the accepted batch and are not kept for it."""
    tenant = await fresh_tenant(uow_factory)
    rows = [
        payment_row(1, amount_cents=1000),
        payment_row(2, amount_cents=2000, creditor_account="12"),  # rejected: the contract refuses the account
        control("AUD", 2, 3000),
    ]
    result = await submit_batch(
        SubmitBatch(tenant, write_csv_with_controls(tmp_path / "r.csv", rows)), uow_factory, Settings()
    )
    assert (result.accepted, result.rejected_count) == (1, 1)
    async with uow_factory(tenant) as u:
        kept = (await u.connection.execute(select(batch_totals).where(batch_totals.c.tenant_id == tenant))).one()
    assert (kept.control_count, kept.control_cents, kept.accepted_count) == (None, None, 1)

    counted_once = [payment_row(3, amount_cents=1000), payment_row(4, amount_cents=2000, creditor_account="12")]
    other = await fresh_tenant(uow_factory)
    error = await refused(
        uow_factory, other, write_csv_with_controls(tmp_path / "r2.csv", [*counted_once, control("AUD", 1, 1000)])
    )
    assert "says 1 AUD payments of 1000 cents; the file has 2 AUD payments of 3000 cents" in str(error)
    assert error.iso_code == "AM18"


async def test_a_currency_without_its_control_record_refuses_the_file(
    uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    rows = [
        payment_row(1, amount_cents=1000),
        payment_row(2, amount_cents=500, currency="USD"),
        control("AUD", 1, 1000),
    ]
    error = await refused(uow_factory, tenant, write_csv_with_controls(tmp_path / "usd.csv", rows))
    assert f"usd.csv: {DISAGREE}the file states no control record for USD; it has 1 USD payments of 500 cents" in str(
        error
    )


async def test_a_control_record_that_cannot_be_read_refuses_the_file(
    uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    rows = [payment_row(1), {"record_type": "control", "currency": "AUD", "control_count": "one", "amount_cents": "1"}]
    error = await refused(uow_factory, tenant, write_csv_with_controls(tmp_path / "bad.csv", rows))
    assert "bad.csv: the control record on line 3 cannot be read (a control record needs currency" in str(error)
    assert "nothing of the file was accepted" in str(error)


async def test_two_control_records_for_one_currency_refuse_the_file(
    uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    rows = [payment_row(1, amount_cents=1000), control("AUD", 1, 1000), control("AUD", 1, 1000)]
    error = await refused(uow_factory, tenant, write_csv_with_controls(tmp_path / "twice.csv", rows))
    assert "the control records on lines 3 and 4 both state AUD totals" in str(error)


async def test_json_lines_control_records_are_enforced_the_same_way(
    uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    error = await refused(uow_factory, tenant, write_jsonl(tmp_path / "lying.jsonl", lying_rows()))
    assert f"lying.jsonl: {DISAGREE}the control record on line 3 says 5 AUD payments of 9999 cents; " in str(error)
    assert error.iso_code == "AM18"
    true = [payment_row(1, amount_cents=1000), payment_row(2, amount_cents=2000), control("AUD", 2, 3000)]
    result = await submit_batch(SubmitBatch(tenant, write_jsonl(tmp_path / "ok.jsonl", true)), uow_factory, Settings())
    assert result.accepted == 2


async def test_pain001_totals_are_refused_in_the_same_words(uow_factory: UnitOfWorkFactory, tmp_path: Path) -> None:
    tenant = await fresh_tenant(uow_factory)
    txs = [Tx("E2E-1", "10.00"), Tx("E2E-2", "20.00")]
    count = tmp_path / "count.xml"
    count.write_bytes(pain001(PAIN_001_09, txs, message_id="MSG-COUNT", count=5))
    error = await refused(uow_factory, tenant, count)
    assert f"count.xml: {DISAGREE}GrpHdr/NbOfTxs says 5 transactions; the file has 2" in str(error)
    assert error.iso_code == "AM19"
    total = tmp_path / "sum.xml"
    total.write_bytes(pain001(PAIN_001_09, txs, message_id="MSG-SUM", control_sum="99.99"))
    error = await refused(uow_factory, tenant, total)
    assert f"sum.xml: {DISAGREE}GrpHdr/CtrlSum says 99.99; the transactions' amounts add up to 30.00" in str(error)
    assert error.iso_code == "AM16"


async def test_aba_totals_are_refused_in_the_same_words(uow_factory: UnitOfWorkFactory, tmp_path: Path) -> None:
    tenant = await fresh_tenant(uow_factory)
    aba = AbaFile([AbaDetail("062-000", "12345678", 1_000, "INV-1"), AbaDetail("062-000", "12345678", 2_000, "INV-2")])
    path = tmp_path / "payroll.aba"
    path.write_text(aba.text(count=5, credits=9_999))
    error = await refused(uow_factory, tenant, path)
    assert f"payroll.aba: {DISAGREE}the file total record (line 4) says 5 detail records, credits 9999" in str(error)
    assert "the file has 2 detail records, credits 3000" in str(error)
    assert error.iso_code == "AM18"

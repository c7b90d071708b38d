"""The validating publisher on real PostgreSQL: one transaction per batch, rejections with reasons."""

from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from app.errors import BatchRefused
from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.settings import Settings
from app.storage.tables import batch_rejections, batches, outbox
from app.storage.unit_of_work import SqlUnitOfWork, UnitOfWorkFactory
from tests.utils.world import fresh_tenant, outbox_rows, payment_row, write_csv, write_jsonl

pytestmark = pytest.mark.integration


async def test_valid_rows_are_accepted_and_invalid_rows_rejected_with_reasons(
    uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    good = [payment_row(n) for n in range(5)]
    bad = [
        payment_row(10, amount_cents="12.50"),
        payment_row(11, currency="ABC"),
        {**good[2]},  # duplicate reference
    ]
    path = write_csv(tmp_path / "batch.csv", [*good[:3], *bad, *good[3:]])

    result = await submit_batch(SubmitBatch(tenant, path), uow_factory, Settings())

    assert result.accepted == 5
    reasons = sorted(" ".join(r.errors) for r in result.rejections)
    assert len(reasons) == 3
    assert any("whole number of cents" in r for r in reasons)
    assert any("'ABC' is not an active ISO 4217" in r for r in reasons)
    assert any("duplicate payment_reference" in r for r in reasons)
    rows = await outbox_rows(uow_factory, result.correlation_id)
    assert [r.payment_reference for r in rows] == [g["payment_reference"] for g in good]
    assert [r.seq for r in rows] == [1, 2, 3, 4, 5]
    assert all(r.published_at is None for r in rows)
    assert result.totals[0].amount_cents == sum(g["amount_cents"] for g in good)


async def test_jsonl_rejects_float_and_string_amounts(uow_factory: UnitOfWorkFactory, tmp_path: Path) -> None:
    tenant = await fresh_tenant(uow_factory)
    path = write_jsonl(
        tmp_path / "b.jsonl",
        [payment_row(1), payment_row(2, amount_cents=15.0), payment_row(3, amount_cents="1500")],
    )
    result = await submit_batch(SubmitBatch(tenant, path), uow_factory, Settings())
    assert result.accepted == 1
    assert [r.row_number for r in result.rejections] == [2, 3]


async def test_unknown_tenant_is_refused_and_nothing_written(uow_factory: UnitOfWorkFactory, tmp_path: Path) -> None:
    path = write_csv(tmp_path / "b.csv", [payment_row(1)])
    with pytest.raises(BatchRefused, match="unknown tenant 'nosuchtenant'"):
        await submit_batch(SubmitBatch("nosuchtenant", path), uow_factory, Settings())


async def test_the_same_file_twice_is_refused(uow_factory: UnitOfWorkFactory, tmp_path: Path) -> None:
    tenant = await fresh_tenant(uow_factory)
    path = write_csv(tmp_path / "b.csv", [payment_row(1), payment_row(2)])
    first = await submit_batch(SubmitBatch(tenant, path), uow_factory, Settings())
    with pytest.raises(BatchRefused, match=f"already submitted as batch {first.correlation_id}"):
        await submit_batch(SubmitBatch(tenant, path), uow_factory, Settings())


async def test_a_reference_accepted_earlier_is_rejected(uow_factory: UnitOfWorkFactory, tmp_path: Path) -> None:
    tenant = await fresh_tenant(uow_factory)
    row = payment_row(1)
    await submit_batch(SubmitBatch(tenant, write_csv(tmp_path / "a.csv", [row])), uow_factory, Settings())
    result = await submit_batch(
        SubmitBatch(tenant, write_csv(tmp_path / "b.csv", [row, payment_row(2)])), uow_factory, Settings()
    )
    assert result.accepted == 1
    assert "already accepted in an earlier batch" in result.rejections[0].errors[0]


class _FailingCommit(SqlUnitOfWork):
    """A unit of work whose commit fails: the batch must leave no trace."""

    async def commit(self) -> None:
        raise ConnectionError("database went away at commit")


async def test_a_batch_is_wholly_accepted_or_not_at_all(
    uow_factory: UnitOfWorkFactory, engine: AsyncEngine, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    path = write_csv(tmp_path / "b.csv", [payment_row(n) for n in range(20)])
    with pytest.raises(ConnectionError):
        await submit_batch(SubmitBatch(tenant, path), lambda tenant=None: _FailingCommit(engine, tenant), Settings())
    async with uow_factory() as uow:
        conn = uow.connection
        for table in (batches, outbox, batch_rejections):
            count = await conn.execute(select(func.count()).where(table.c.tenant_id == tenant))
            assert count.scalar_one() == 0, table.name

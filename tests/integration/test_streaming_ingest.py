"""Bank files of any size are accepted as a stream, in one transaction, on the real database and as the
service's own role (row-level security on): big files go in whole, memory does not grow with the file, a
file found wrong at its end leaves nothing behind, tenant limits refuse a file whole, and concurrent
uploads neither collide nor pay twice."""

import asyncio
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from app.bankfiles.reader import CHILD_MIN_BYTES
from app.errors import BatchRefused, FileRefused, LimitExceeded, UsageError
from app.publisher.accept import submit_batch
from app.publisher.commands import IngestProgress, SubmitBatch
from app.resources import uow_factory_for
from app.settings import Settings
from app.storage.engine import make_engine
from app.storage.tables import batch_rejections, batch_totals, batches, outbox
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.bankfile_samples import write_sample
from tests.utils.bankfile_writers import PAIN_001_09, AbaDetail, AbaFile, Tx, pain001
from tests.utils.ingest_process import ingest_in_process, reader_children
from tests.utils.world import fresh_tenant, payment_row, write_csv

pytestmark = pytest.mark.integration


@pytest.fixture
async def app_uow(settings: Settings) -> AsyncIterator[UnitOfWorkFactory]:
    """Units of work as the service runs them: the remit_app role, bound by row-level security."""
    engine = make_engine(settings.database_url, pool_size=5)
    yield uow_factory_for(engine)
    await engine.dispose()


async def _set_limits(uow: UnitOfWorkFactory, tenant: str, **limits: int) -> None:
    assignments = ", ".join(f"{column} = :{column}" for column in limits)
    async with uow() as u:
        await u.connection.execute(
            text(f"UPDATE tenants SET {assignments} WHERE tenant_id = :tenant"), {**limits, "tenant": tenant}
        )
        await u.commit()


async def _left_behind(uow: UnitOfWorkFactory, tenant: str) -> dict[str, int]:
    async with uow() as u:
        return {
            table.name: (
                await u.connection.execute(select(func.count()).where(table.c.tenant_id == tenant))
            ).scalar_one()
            for table in (batches, outbox, batch_rejections, batch_totals)
        }


NOTHING = {"batches": 0, "outbox": 0, "batch_rejections": 0, "batch_totals": 0}


async def test_a_40000_row_csv_is_accepted_whole(
    app_uow: UnitOfWorkFactory, uow_factory: UnitOfWorkFactory, settings: Settings, tmp_path: Path
) -> None:
    # Before: one INSERT of 40,000 rows x 10 columns passed PostgreSQL's 32,767 bind parameters: exit 1.
    tenant = await fresh_tenant(uow_factory)
    path = tmp_path / "big.csv"
    write_sample(path, "csv", 40_000)
    result = await submit_batch(SubmitBatch(tenant, path), app_uow, settings)
    assert (result.accepted, result.rejected_count, result.source_format) == (40_000, 0, "csv")
    assert [(t.currency, t.count, t.amount_cents) for t in result.totals] == [("AUD", 40_000, 40_000 * 1234)]
    async with uow_factory() as u:
        seqs = (
            await u.connection.execute(
                select(
                    func.count(), func.min(outbox.c.seq), func.max(outbox.c.seq), func.max(outbox.c.row_number)
                ).where(outbox.c.correlation_id == result.correlation_id)
            )
        ).one()
    assert tuple(seqs) == (40_000, 1, 40_000, 40_001)  # row numbers are file lines: the header is line 1


async def test_memory_does_not_grow_with_the_file(
    uow_factory: UnitOfWorkFactory, settings: Settings, tmp_path: Path
) -> None:
    """Peak RSS of a process submitting 20,000 rows, then 500,000 (a 28 MB file): the same, to within 16 MB.

    Holding the file would add its 28 MB; holding its rows (what remit did: a dict per row, every message
    validated in a list) several hundred MB; holding only its 500,000 references for the duplicate check
    about 40 MB. Two chunks of 5,000 rows (the one written and the one read meanwhile) are about 15 MB
    whatever the file's size."""
    peaks = {}
    for rows in (20_000, 500_000):
        tenant = await fresh_tenant(uow_factory)
        await _set_limits(uow_factory, tenant, max_in_flight=rows, publish_rate_per_second=rows)
        path = tmp_path / f"{rows}.csv"
        write_sample(path, "csv", rows)
        result = ingest_in_process(settings.database_url, tenant, path)
        assert (result["accepted"], result["rejected"]) == (rows, 0)
        peaks[rows] = result["peak_mb"]
    assert (tmp_path / "500000.csv").stat().st_size > 25 * 2**20
    assert peaks[500_000] - peaks[20_000] < 16, peaks


@pytest.mark.parametrize("written_before", [50, 95])
async def test_a_truncated_pain001_leaves_nothing_behind(
    app_uow: UnitOfWorkFactory, uow_factory: UnitOfWorkFactory, settings: Settings, tmp_path: Path, written_before: int
) -> None:
    tenant = await fresh_tenant(uow_factory)
    data = pain001(PAIN_001_09, [Tx(f"T-{n:04d}", "10.00", creditor_account=f"{10_000_000 + n}") for n in range(100)])
    cut = data.index(b"<CdtTrfTxInf>", data.index(f"T-{written_before:04d}".encode()))
    path = tmp_path / "cut.xml"
    path.write_bytes(data[: cut + 20])
    seen: list[IngestProgress] = []
    with pytest.raises(FileRefused, match=r"truncated|ends before"):
        await submit_batch(
            SubmitBatch(tenant, path),
            app_uow,
            settings.model_copy(update={"ingest_chunk_rows": 10}),
            progress=seen.append,
        )
    assert seen[-1].rows >= written_before - 10  # chunks were written before the end was seen
    assert await _left_behind(uow_factory, tenant) == NOTHING


async def test_a_wrong_aba_trailer_leaves_nothing_behind(
    app_uow: UnitOfWorkFactory, uow_factory: UnitOfWorkFactory, settings: Settings, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    aba = AbaFile([AbaDetail("062-000", f"{10_000_000 + n}", 1000 + n, f"PAY {n:04d}") for n in range(60)])
    credits = sum(1000 + n for n in range(60))
    path = tmp_path / "payroll.aba"
    path.write_text(aba.text(credits=credits + 1), newline="")
    seen: list[IngestProgress] = []
    with pytest.raises(FileRefused, match=f"credits {credits + 1}") as refused:
        await submit_batch(
            SubmitBatch(tenant, path),
            app_uow,
            settings.model_copy(update={"ingest_chunk_rows": 10}),
            progress=seen.append,
        )
    assert refused.value.iso_code == "AM10"
    assert seen[-1].rows == 60  # every row was written before the file total record was read
    assert await _left_behind(uow_factory, tenant) == NOTHING


@pytest.mark.parametrize(("rows", "accepted"), [(99, True), (100, True), (101, False)])
async def test_a_file_over_the_in_flight_limit_is_refused_whole(
    app_uow: UnitOfWorkFactory,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    tmp_path: Path,
    rows: int,
    accepted: bool,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    await _set_limits(uow_factory, tenant, max_in_flight=100)
    path = write_csv(tmp_path / "b.csv", [payment_row(n) for n in range(rows)])
    small_chunks = settings.model_copy(update={"ingest_chunk_rows": 10})
    if accepted:
        assert (await submit_batch(SubmitBatch(tenant, path), app_uow, small_chunks)).accepted == rows
        return
    with pytest.raises(LimitExceeded, match="has 0 payments in flight; 101 more would pass its limit of 100"):
        await submit_batch(SubmitBatch(tenant, path), app_uow, small_chunks)
    assert await _left_behind(uow_factory, tenant) == NOTHING


# A pain.001 of 4 MiB or more is read by a child process (CHILD_MIN_BYTES). Before: that child ran on until the
# refused ingest's generator was collected; when that was at interpreter exit, its feeder thread held the pipe
# and the exit aborted ("Fatal Python error: _enter_buffered_busy").
@pytest.mark.parametrize(("fmt", "rows"), [("csv", 20_000), ("pain.001", 12_000)])
async def test_a_file_far_over_the_limit_is_refused_without_reading_it_all(
    app_uow: UnitOfWorkFactory, uow_factory: UnitOfWorkFactory, settings: Settings, tmp_path: Path, fmt: str, rows: int
) -> None:
    tenant = await fresh_tenant(uow_factory)
    await _set_limits(uow_factory, tenant, max_in_flight=100)
    path = tmp_path / f"big.{fmt}"
    write_sample(path, fmt, rows)
    if fmt == "pain.001":
        assert path.stat().st_size >= CHILD_MIN_BYTES
    seen: list[IngestProgress] = []
    with pytest.raises(LimitExceeded, match="limit of 100") as refused:
        await submit_batch(
            SubmitBatch(tenant, path),
            app_uow,
            settings.model_copy(update={"ingest_chunk_rows": 50}),
            progress=seen.append,
        )
    assert seen[-1].rows == 100  # refused at the first chunk past the limit, thousands of rows before the end
    assert refused.traceback  # still held, with every frame of the ingest, as a caller logging it would
    assert reader_children() == []  # the reader stopped before the refusal reached its caller
    assert await _left_behind(uow_factory, tenant) == NOTHING


async def test_twenty_uploads_at_once_all_succeed(
    app_uow: UnitOfWorkFactory, uow_factory: UnitOfWorkFactory, settings: Settings, tmp_path: Path
) -> None:
    # Before: the batch id was bulk_<tenant>_<date>_batch_<count of the day's batches + 1>, so uploads at the
    # same moment took the same id and all but one failed on pk_batches.
    tenant = await fresh_tenant(uow_factory)
    paths = [write_csv(tmp_path / f"b{k}.csv", [payment_row(n) for n in range(25)]) for k in range(20)]
    results = await asyncio.gather(*(submit_batch(SubmitBatch(tenant, p), app_uow, settings) for p in paths))
    assert [r.accepted for r in results] == [25] * 20
    assert len({r.correlation_id for r in results}) == 20
    assert (await _left_behind(uow_factory, tenant))["outbox"] == 500


async def test_one_file_uploaded_twice_at_once_is_accepted_once(
    app_uow: UnitOfWorkFactory, uow_factory: UnitOfWorkFactory, settings: Settings, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    path = write_csv(tmp_path / "b.csv", [payment_row(n) for n in range(300)])
    small_chunks = settings.model_copy(update={"ingest_chunk_rows": 20})
    outcomes = await asyncio.gather(
        *(submit_batch(SubmitBatch(tenant, path), app_uow, small_chunks) for _ in range(2)), return_exceptions=True
    )
    accepted = [o for o in outcomes if not isinstance(o, BaseException)]
    refused = [o for o in outcomes if isinstance(o, BatchRefused)]
    assert (len(accepted), len(refused)) == (1, 1), outcomes
    assert (await _left_behind(uow_factory, tenant))["outbox"] == 300


async def test_a_pain001_message_id_is_the_files_identity(
    app_uow: UnitOfWorkFactory, uow_factory: UnitOfWorkFactory, settings: Settings, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    first, second = tmp_path / "first.xml", tmp_path / "second.xml"
    first.write_bytes(pain001(PAIN_001_09, [Tx("A-1", "10.00")], message_id="ACME-MSG-1"))
    second.write_bytes(pain001(PAIN_001_09, [Tx("A-2", "20.00")], message_id="ACME-MSG-1"))  # other bytes
    accepted = await submit_batch(SubmitBatch(tenant, first), app_uow, settings)
    with pytest.raises(
        BatchRefused, match=f"GrpHdr/MsgId 'ACME-MSG-1'\\) was already submitted as batch {accepted.correlation_id}"
    ):
        await submit_batch(SubmitBatch(tenant, second), app_uow, settings)
    again = await submit_batch(SubmitBatch(tenant, second, allow_resubmit=True), app_uow, settings)
    assert again.accepted == 1
    async with uow_factory() as u:
        stated = (
            await u.connection.execute(
                select(
                    batches.c.source_format, batches.c.source_identity, batches.c.stated_count, batches.c.stated_sum
                ).where(batches.c.correlation_id == again.correlation_id)
            )
        ).one()
    assert tuple(stated) == ("pain.001.001.09", "ACME-MSG-1", 1, Decimal("20.00"))


async def test_references_are_settled_across_chunks(
    app_uow: UnitOfWorkFactory, uow_factory: UnitOfWorkFactory, settings: Settings, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    rows = [payment_row(n) for n in range(30)]
    bad = payment_row(99, currency="ABC")  # rejected, but its reference is still taken (line 32)
    rows.insert(30, bad)
    rows += [dict(rows[2]), dict(bad)]  # lines 33 and 34 repeat line 4 (accepted) and line 32 (rejected)
    path = write_csv(tmp_path / "b.csv", rows)
    result = await submit_batch(
        SubmitBatch(tenant, path), app_uow, settings.model_copy(update={"ingest_chunk_rows": 10})
    )
    assert result.accepted == 30
    reasons = {r.row_number: r.errors[0] for r in result.rejections}
    assert reasons[33] == f"duplicate payment_reference {rows[2]['payment_reference']!r} (first seen at line 4)"
    assert reasons[34] == f"duplicate payment_reference {bad['payment_reference']!r} (first seen at line 32)"


@pytest.mark.parametrize("listed", [9, 10, 11])
async def test_the_receipt_lists_the_first_rejections_and_counts_them_all(
    app_uow: UnitOfWorkFactory, uow_factory: UnitOfWorkFactory, settings: Settings, tmp_path: Path, listed: int
) -> None:
    tenant = await fresh_tenant(uow_factory)
    rows = [payment_row(0), *(payment_row(n, currency="ABC") for n in range(1, 11))]
    path = write_csv(tmp_path / "b.csv", rows)
    result = await submit_batch(
        SubmitBatch(tenant, path),
        app_uow,
        settings.model_copy(update={"ingest_rejections_listed": listed, "ingest_chunk_rows": 3}),
    )
    assert result.rejected_count == 10
    assert [r.row_number for r in result.rejections] == list(range(3, 3 + min(listed, 10)))
    assert (await _left_behind(uow_factory, tenant))["batch_rejections"] == 10


async def test_a_batch_id_that_is_taken_is_refused(
    app_uow: UnitOfWorkFactory, uow_factory: UnitOfWorkFactory, settings: Settings, tmp_path: Path
) -> None:
    tenant = await fresh_tenant(uow_factory)
    first = write_csv(tmp_path / "a.csv", [payment_row(1)])
    second = write_csv(tmp_path / "b.csv", [payment_row(2)])
    named = f"bulk_{tenant}_named_0001"
    assert (await submit_batch(SubmitBatch(tenant, first, named), app_uow, settings)).correlation_id == named
    with pytest.raises(BatchRefused, match=f"batch id '{named}' is taken"):
        await submit_batch(SubmitBatch(tenant, second, named), app_uow, settings)
    with pytest.raises(UsageError, match="batch id 'no spaces' is not valid"):
        await submit_batch(SubmitBatch(tenant, second, "no spaces"), app_uow, settings)

"""Accept a bulk batch from a bank file of any format remit reads, as a stream, in ONE transaction.

The file is read and checked a chunk at a time (Settings.ingest_chunk_rows) in a worker thread while the
previous chunk is written, so memory is bounded by the chunk, not the file, and parsing overlaps the
database. Everything is written in the transaction that accepts the batch: a file found truncated, or whose
trailer or control totals disagree at its end, is refused whole and leaves nothing behind; other processes
see the batch whole or not at all.
"""

import asyncio
import re
from collections.abc import Generator
from datetime import UTC, datetime
from itertools import islice
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.bankfiles import BankFile, BankRow
from app.errors import BatchRefused, UsageError
from app.payment_rules import PaymentRules
from app.publisher.batch_record import close_batch, file_controls, new_batch_id, open_batch, refuse_duplicate_file
from app.publisher.batch_writer import BatchWriter, Tally
from app.publisher.commands import BatchAccepted, IngestProgress, OnProgress, SubmitBatch
from app.publisher.gc_pause import gc_paused
from app.publisher.validation import BatchContext, CheckedRow, check_rows
from app.settings import Settings
from app.storage.tables import tenants
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.limits import BatchLoad, admit, allowance
from app.tenancy.tenants import refusal
from contracts.message import CORRELATION_ID_PATTERN


async def submit_batch(
    command: SubmitBatch,
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    now: datetime | None = None,
    progress: OnProgress | None = None,
) -> BatchAccepted:
    now = now or datetime.now(UTC)
    correlation_id = _batch_id(command, now)
    with BankFile(command.path, command.bank_format) as bank:
        async with uow_factory(command.tenant_id) as uow:
            conn = uow.connection
            tenant = await _active_tenant(conn, command.tenant_id)
            await open_batch(conn, correlation_id, command.tenant_id, bank.name)
            ctx = BatchContext(
                tenant_id=command.tenant_id,
                correlation_id=correlation_id,
                now=now,
                ttl_seconds=tenant.default_ttl_seconds,
                rules=PaymentRules.from_settings(settings),
                max_message_bytes=tenant.max_message_bytes,
                known_references=frozenset(),
            )
            tally = Tally(listed=settings.ingest_rejections_listed)
            writer = BatchWriter(conn, ctx, await allowance(uow, tenant, now), tally, bank.name)
            await _stream(bank, ctx, writer, settings.ingest_chunk_rows, progress)
            summary = bank.summary
            if not command.allow_resubmit:
                await refuse_duplicate_file(conn, command.tenant_id, summary, correlation_id)
            if not tally.accepted:
                raise BatchRefused(f"{bank.name}: no valid payment in the file ({_why_rejected(tally)})")
            await admit(uow, tenant, BatchLoad(tally.accepted, tally.bytes), now, correlation_id)
            await close_batch(conn, command.tenant_id, correlation_id, summary, tally)
            await uow.commit()
    return BatchAccepted(
        tenant_id=command.tenant_id,
        correlation_id=correlation_id,
        accepted=tally.accepted,
        rejected_count=tally.rejected,
        rejections=tally.rejections,
        totals=tally.totals(),
        controls=list(file_controls(summary, tally)),
        source_format=summary.format,
    )


def _why_rejected(tally: Tally) -> str:
    """How many rows were rejected, and the first one's reasons: often every row's (a wrong field name)."""
    first = tally.rejections[0] if tally.rejections else None
    return f"{tally.rejected} rejected rows" + (
        f"; line {first.row_number}: {'; '.join(first.errors)}" if first else ""
    )


def _batch_id(command: SubmitBatch, now: datetime) -> str:
    if command.correlation_id is None:
        return new_batch_id(command.tenant_id, now)
    if not re.fullmatch(CORRELATION_ID_PATTERN, command.correlation_id):
        raise UsageError(
            f"batch id {command.correlation_id!r} is not valid: 1-64 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return command.correlation_id


async def _stream(
    bank: BankFile, ctx: BatchContext, writer: BatchWriter, chunk_rows: int, progress: OnProgress | None
) -> None:
    """Read and check the next chunk in a thread while this one is written; the thread is always waited for,
    so the file is never closed under it."""
    rows: Generator[BankRow, None, None] = bank.rows()
    total_bytes = bank.size

    def next_chunk() -> list[CheckedRow]:
        return check_rows(islice(rows, chunk_rows), ctx)

    with gc_paused():  # the chunks' objects die by reference counting: the collector would only walk them
        pending = asyncio.ensure_future(asyncio.to_thread(next_chunk))
        try:
            while chunk := await pending:
                pending = asyncio.ensure_future(asyncio.to_thread(next_chunk))
                await writer.write(chunk)
                if progress is not None:
                    progress(IngestProgress(writer.tally.rows, bank.bytes_read, total_bytes))
        finally:
            await asyncio.gather(pending, return_exceptions=True)
            rows.close()  # a file refused part-way stops its reader (a large pain.001's child process) now


async def _active_tenant(conn: AsyncConnection, tenant_id: str) -> Row[Any]:
    row = (await conn.execute(select(tenants).where(tenants.c.tenant_id == tenant_id))).one_or_none()
    if row is None:
        raise BatchRefused(f"unknown tenant {tenant_id!r}. Add it first: remit tenants add {tenant_id} --name ...")
    if row.status != "active":
        raise BatchRefused(refusal(tenant_id, row.status))
    return row

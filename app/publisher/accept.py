"""Accept a bulk batch: every valid row and the batch itself are written to the outbox in ONE transaction."""

from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Row, func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.errors import BatchRefused
from app.publisher.bulk_file import BulkFile, read_bulk_file
from app.publisher.commands import BatchAccepted, CurrencyTotal, SubmitBatch
from app.publisher.validation import BatchContext, Rejection, ValidatedBatch, validate_rows
from app.settings import Settings
from app.storage.tables import batch_rejections, batch_totals, batches, outbox, tenants
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.limits import BatchLoad, admit
from contracts import PaymentMessage


async def submit_batch(
    command: SubmitBatch, uow_factory: UnitOfWorkFactory, settings: Settings, now: datetime | None = None
) -> BatchAccepted:
    bulk = read_bulk_file(command.path)
    now = now or datetime.now(UTC)
    async with uow_factory(command.tenant_id) as uow:
        conn = uow.connection
        tenant = await _active_tenant(conn, command.tenant_id)
        if not command.allow_resubmit:
            await _refuse_resubmission(conn, command.tenant_id, bulk)
        correlation_id = command.correlation_id or await _next_correlation_id(conn, command.tenant_id, now)
        ctx = BatchContext(
            tenant_id=command.tenant_id,
            correlation_id=correlation_id,
            now=now,
            ttl_seconds=tenant.default_ttl_seconds,
            max_amount_cents=settings.max_amount_cents,
            known_references=await _known_references(conn, command.tenant_id, bulk),
        )
        batch = validate_rows(bulk.rows, ctx)
        _reject_oversize(batch, tenant.max_message_bytes)
        if not batch.accepted:
            raise BatchRefused(f"{bulk.name}: no valid payment in the file ({len(batch.rejected)} rejected rows)")
        await admit(conn, tenant, BatchLoad(len(batch.accepted), sum(len(m.to_wire()) for m in batch.accepted)), now)
        await _write(conn, bulk, ctx, batch)
        await uow.commit()
    return BatchAccepted(
        tenant_id=command.tenant_id,
        correlation_id=correlation_id,
        accepted=len(batch.accepted),
        rejections=batch.rejected,
        totals=_totals(batch.accepted),
        controls=batch.controls,
    )


async def _active_tenant(conn: AsyncConnection, tenant_id: str) -> Row[Any]:
    row = (await conn.execute(select(tenants).where(tenants.c.tenant_id == tenant_id))).one_or_none()
    if row is None:
        raise BatchRefused(f"unknown tenant {tenant_id!r}. Add it first: remit tenants add {tenant_id} --name ...")
    if row.status != "active":
        raise BatchRefused(f"tenant {tenant_id!r} is {row.status}; nothing was accepted")
    return row


def _reject_oversize(batch: ValidatedBatch, max_bytes: int) -> None:
    kept = []
    for number, message in zip(batch.row_numbers, batch.accepted, strict=True):
        size = len(message.to_wire())
        if size > max_bytes:
            batch.rejected.append(
                Rejection(
                    number,
                    [f"the message is {size} bytes, over the tenant's limit of {max_bytes}"],
                    message.payment_reference,
                    message.currency,
                    message.amount_cents,
                )
            )
        else:
            kept.append((number, message))
    batch.row_numbers = [n for n, _ in kept]
    batch.accepted = [m for _, m in kept]


async def _refuse_resubmission(conn: AsyncConnection, tenant_id: str, bulk: BulkFile) -> None:
    query = select(batches.c.correlation_id).where(
        batches.c.tenant_id == tenant_id, batches.c.source_sha256 == bulk.sha256
    )
    earlier = (await conn.execute(query)).scalar_one_or_none()
    if earlier is not None:
        raise BatchRefused(
            f"{bulk.name} was already submitted as batch {earlier}; resubmitting could pay twice. "
            "Use --allow-resubmit only if the earlier batch was not processed."
        )


async def _next_correlation_id(conn: AsyncConnection, tenant_id: str, now: datetime) -> str:
    prefix = f"bulk_{tenant_id}_{now:%Y%m%d}_batch_"
    query = select(func.count()).where(batches.c.correlation_id.startswith(prefix, autoescape=True))
    count = (await conn.execute(query)).scalar_one()
    return f"{prefix}{count + 1:04d}"


async def _known_references(conn: AsyncConnection, tenant_id: str, bulk: BulkFile) -> frozenset[str]:
    refs = [r.fields["payment_reference"] for r in bulk.rows if isinstance(r.fields.get("payment_reference"), str)]
    query = select(outbox.c.payment_reference).where(
        outbox.c.tenant_id == tenant_id, outbox.c.payment_reference.in_(refs)
    )
    return frozenset((await conn.execute(query)).scalars())


async def _write(conn: AsyncConnection, bulk: BulkFile, ctx: BatchContext, batch: ValidatedBatch) -> None:
    await conn.execute(
        insert(batches).values(
            correlation_id=ctx.correlation_id,
            tenant_id=ctx.tenant_id,
            source_name=bulk.name,
            source_sha256=bulk.sha256,
            accepted_count=len(batch.accepted),
            rejected_count=len(batch.rejected),
        )
    )
    await conn.execute(insert(outbox), [_outbox_row(seq, m) for seq, m in enumerate(batch.accepted, start=1)])
    await conn.execute(insert(batch_totals), _total_rows(ctx, batch))
    if batch.rejected:
        await conn.execute(
            insert(batch_rejections),
            [
                {
                    "correlation_id": ctx.correlation_id,
                    "row_number": r.row_number,
                    "tenant_id": ctx.tenant_id,
                    "payment_reference": r.payment_reference,
                    "currency": r.currency,
                    "amount_cents": r.amount_cents,
                    "errors": r.errors,
                }
                for r in batch.rejected
            ],
        )


def _outbox_row(seq: int, m: PaymentMessage) -> dict[str, object]:
    return {
        "message_id": m.message_id,
        "tenant_id": m.tenant_id,
        "correlation_id": m.correlation_id,
        "seq": seq,
        "payment_reference": m.payment_reference,
        "amount_cents": m.amount_cents,
        "currency": m.currency,
        "body": m.to_wire(),
        "accepted_at": m.timestamp_utc,
        "expires_at": m.expires_at,
    }


def _totals(accepted: Sequence[PaymentMessage]) -> list[CurrencyTotal]:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for m in accepted:
        counts[m.currency][0] += 1
        counts[m.currency][1] += m.amount_cents
    return [CurrencyTotal(c, n, cents) for c, (n, cents) in sorted(counts.items())]


def _total_rows(ctx: BatchContext, batch: ValidatedBatch) -> list[dict[str, object]]:
    controls = {c.currency: c for c in batch.controls}
    accepted = {t.currency: t for t in _totals(batch.accepted)}
    rows = []
    for currency in sorted(accepted.keys() | controls.keys()):
        total = accepted.get(currency, CurrencyTotal(currency, 0, 0))
        control = controls.get(currency)
        rows.append(
            {
                "correlation_id": ctx.correlation_id,
                "currency": total.currency,
                "tenant_id": ctx.tenant_id,
                "accepted_count": total.count,
                "accepted_cents": total.amount_cents,
                "control_count": control.count if control else None,
                "control_cents": control.amount_cents if control else None,
            }
        )
    return rows

"""A batch's own row: opened before its payments are written (they refer to it), closed with what the file
said about itself and what was accepted. Duplicate files are found here, by the file's identity."""

import secrets
from datetime import datetime

from sqlalchemy import insert, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from app.bankfiles import FileSummary
from app.bankfiles.formats import PAIN_001_NAMESPACES
from app.errors import BatchRefused
from app.publisher.batch_writer import Tally
from app.publisher.bulk_file import ControlTotal
from app.publisher.commands import CurrencyTotal
from app.storage.db_errors import violated_constraint
from app.storage.tables import batch_totals, batches

_PAIN_001 = {f.value for f in PAIN_001_NAMESPACES.values()}
# Held until the transaction ends: two uploads of one file check for each other one after the other.
_LOCK_FILE = text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))")


def new_batch_id(tenant_id: str, now: datetime) -> str:
    """bulk_<tenant>_<date>_<48 random bits>: unique however many uploads arrive at once (a count of the
    day's batches was not), at most 59 characters for the longest tenant id."""
    return f"bulk_{tenant_id}_{now:%Y%m%d}_{secrets.token_hex(6)}"


async def open_batch(conn: AsyncConnection, correlation_id: str, tenant_id: str, source_name: str) -> None:
    values = {"source_sha256": "", "source_identity": "", "accepted_count": 0, "rejected_count": 0}
    try:
        await conn.execute(
            insert(batches).values(
                correlation_id=correlation_id, tenant_id=tenant_id, source_name=source_name, **values
            )
        )
    except IntegrityError as exc:
        if violated_constraint(exc) != "pk_batches":
            raise
        raise BatchRefused(f"batch id {correlation_id!r} is taken; choose another --batch-id") from None


async def refuse_duplicate_file(
    conn: AsyncConnection, tenant_id: str, summary: FileSummary, correlation_id: str
) -> None:
    """Refuse a file whose identity (pain.001 GrpHdr/MsgId, else the SHA-256 of its bytes) the tenant has
    submitted before, in a batch committed before this check."""
    await conn.execute(_LOCK_FILE, {"key": f"remit-file:{tenant_id}:{summary.identity}"})
    query = (
        select(batches.c.correlation_id)
        .where(
            batches.c.tenant_id == tenant_id,
            batches.c.source_identity == summary.identity,
            batches.c.correlation_id != correlation_id,
        )
        .limit(1)
    )
    earlier = (await conn.execute(query)).scalar_one_or_none()
    if earlier is None:
        return
    what = summary.name
    if summary.format in _PAIN_001:
        what = f"{summary.name} (a pain.001 with GrpHdr/MsgId {summary.identity!r})"
    refused = f"{what} was already submitted as batch {earlier}; resubmitting could pay twice."
    raise BatchRefused(
        f"{refused} Use --allow-resubmit only if the earlier batch was not processed.",
        over_http=f"{refused} Send allow_resubmit=true only if the earlier batch was not processed.",
    )


def file_controls(summary: FileSummary, tally: Tally) -> tuple[ControlTotal, ...]:
    """The totals a bank file states (pain.001 NbOfTxs/CtrlSum in one currency, the ABA file total, a CSV's or
    JSON Lines file's control records), as the batch's control totals, which reconciliation holds the accepted
    payments to. The reader has checked them against every row of the file; with a row rejected they no longer
    describe the batch (the ABA total counts the rejected self-balancing debit's credits, a pain.001 CtrlSum
    and a control record every amount written), so they are kept only on the batch (stated_count, stated_sum)
    for its status report."""
    return summary.controls if tally.rejected == 0 else ()


async def close_batch(
    conn: AsyncConnection, tenant_id: str, correlation_id: str, summary: FileSummary, tally: Tally
) -> None:
    await conn.execute(
        update(batches)
        .where(batches.c.correlation_id == correlation_id)
        .values(
            source_sha256=summary.sha256,
            source_identity=summary.identity,
            source_format=summary.format,
            stated_count=summary.stated_count,
            stated_sum=summary.stated_sum,
            accepted_count=tally.accepted,
            rejected_count=tally.rejected,
        )
    )
    stated = {c.currency: c for c in file_controls(summary, tally)}
    accepted = {t.currency: t for t in tally.totals()}
    rows = []
    for currency in sorted(accepted.keys() | stated.keys()):
        total = accepted.get(currency, CurrencyTotal(currency, 0, 0))
        control = stated.get(currency)
        rows.append(
            {
                "correlation_id": correlation_id,
                "currency": currency,
                "tenant_id": tenant_id,
                "accepted_count": total.count,
                "accepted_cents": total.amount_cents,
                "control_count": control.count if control else None,
                "control_cents": control.amount_cents if control else None,
            }
        )
    await conn.execute(insert(batch_totals), rows)

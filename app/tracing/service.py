"""Trace one payment: find it, read every record of it, put the events in order, add the last
reconciliation's word. The CLI, the API and the console all call `trace_payment`."""

import json
from collections.abc import Mapping
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from app.consumer.core_keys import FIRST_GENERATION, transfer_key
from app.deadletters import reasons
from app.deadletters.masking import mask_account, mask_text
from app.storage.tables import batch_rejections
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tracing import model as m
from app.tracing.events import RETRYING, in_order, record_events, rejection_events, same_reference_events
from app.tracing.lookup import PaymentQuery, find_payment, rejections
from app.tracing.records import Records, read_records
from app.tracing.verdict import last_verdict


async def trace_payment(
    uow_factory: UnitOfWorkFactory,
    query: PaymentQuery,
    scope: str | None = None,
    reconciliation_uow: UnitOfWorkFactory | None = None,
    core: str | None = None,
) -> m.PaymentTrace:
    """The payment `query` names within `scope` (a tenant; None: every tenant, for operators), read in
    that tenant's row-level-security scope. Reconciliation runs are shared by all tenants and read through
    `reconciliation_uow` (default: `uow_factory`), filtered by the payment's own tenant. `core`: the external
    core's name (Settings.core_banking_label), for a booking it made."""
    async with uow_factory(scope) as uow:
        match = await find_payment(uow.connection, query, scope)
        if match.key is None:
            return _rejected_only(match.rejections)
        records = await read_records(uow.connection, match.key)
        rejected = await _same_reference_rejected(uow.connection, match.key, records)
    events = in_order(record_events(records) + same_reference_events(rejected, records.ledger is not None))
    first_seen = events[0].at if events else None
    verdict = await last_verdict(reconciliation_uow or uow_factory, match.key, first_seen)
    return _trace(match.key, records, events, verdict, core)


async def _same_reference_rejected(conn: AsyncConnection, key: m.PaymentKey, records: Records) -> list[Any]:
    """Rows of the tenant's files rejected with this payment's reference (a resubmission, a duplicate)."""
    payment = records.payment
    if payment is None or key.tenant_id is None or payment.payment_reference is None:
        return []
    return await rejections(conn, key.tenant_id, batch_rejections.c.payment_reference == payment.payment_reference)


def _trace(
    key: m.PaymentKey,
    records: Records,
    events: list[m.Event],
    verdict: m.ReconciliationVerdict | None,
    core: str | None,
) -> m.PaymentTrace:
    payment, booking = records.payment, booking_of(records, core)
    debtor, creditor = _parties(records)
    return m.PaymentTrace(
        tenant_id=key.tenant_id,
        message_id=key.message_id,
        payment_reference=payment.payment_reference if payment else None,
        correlation_id=payment.correlation_id if payment else _batch_of(records),
        amount_cents=payment.amount_cents if payment else None,
        currency=payment.currency if payment else None,
        debtor=debtor,
        creditor=creditor,
        origin=m.BULK_FILE if records.outbox is not None else m.DIRECT,
        state=state_of(events, booking is not None),
        events=events,
        booking=booking,
        reconciliation=verdict,
    )


def booking_of(records: Records, core: str | None) -> m.Booking | None:
    """Where the money moved, from where it happened: the external core's transfer when remit recorded one (its id,
    its time, its key), else the in-process ledger's row. None: not booked."""
    booked, done = records.ledger, records.processed
    if done is not None and done.core_transfer_id is not None:
        generation = done.core_key_generation or FIRST_GENERATION
        return m.Booking(
            system=m.EXTERNAL_CORE,
            transfer_id=done.core_transfer_id,
            booked_at=done.core_booked_at,
            ledger_transfer_id=booked.transfer_id if booked is not None else None,
            core=core or "the external core (REMIT_CORE_BANKING_URL is not set here)",
            core_transfer_id=done.core_transfer_id,
            core_key=transfer_key(done.tenant_id, done.message_id, generation),
            recorded_at=done.processed_at,
        )
    if booked is None:
        return None
    return m.Booking(
        system=m.IN_PROCESS_LEDGER,
        transfer_id=str(booked.transfer_id),
        booked_at=booked.booked_at,
        ledger_transfer_id=booked.transfer_id,
        recorded_at=done.processed_at if done is not None else None,
    )


def _rejected_only(rows: list[Any]) -> m.PaymentTrace:
    first = rows[0]
    return m.PaymentTrace(
        tenant_id=first.tenant_id,
        message_id=None,
        payment_reference=first.payment_reference,
        correlation_id=first.correlation_id,
        amount_cents=first.amount_cents,
        currency=first.currency,
        debtor=None,
        creditor=None,
        origin=m.VALIDATION,
        state=m.REJECTED,
        events=in_order(rejection_events(rows)),
        booking=None,
        reconciliation=None,
    )


def state_of(events: list[m.Event], booked: bool) -> str:
    """Where the payment is now: processed once it is booked, whatever came after (a replay that found it
    processed); otherwise what its last event left it as. A refused replay changes nothing, nor does another
    row rejected with its reference (a duplicate refused, a resubmission's first try: that row is not this
    payment)."""
    if booked:
        return m.PROCESSED
    for event in reversed(events):
        if event.stage == m.ATTEMPT_FAILED:
            return "retrying" if event.details["outcome"] == RETRYING else m.DEAD_LETTERED
        if event.stage == m.DEAD_LETTERED:
            return "expired" if event.details["reason"] == reasons.EXPIRED else m.DEAD_LETTERED
        if event.stage == m.PROCESSED:
            return "processed without a booking"
        if event.stage not in (m.REPLAY_REFUSED, m.REJECTED, m.DUPLICATE_REFUSED, m.OTHER_ROW_REJECTED):
            return event.stage
    return m.REJECTED if events else "unknown"


def _batch_of(records: Records) -> str | None:
    return records.processed.correlation_id if records.processed is not None else None


def _parties(records: Records) -> tuple[str | None, str | None]:
    """Debtor and creditor as BSB and masked account: from the booking, else from the message itself."""
    fields: Mapping[str, Any] = {}
    if records.ledger is not None:
        fields = dict(records.ledger._mapping)
    elif records.outbox is not None:
        fields = _json_object(records.outbox.body)
    elif records.dead_letters and not records.dead_letters[-1].body_truncated:
        fields = _json_object(records.dead_letters[-1].body)
    return _party(fields, "debtor"), _party(fields, "creditor")


def _party(fields: Mapping[str, Any], side: str) -> str | None:
    bsb, account = fields.get(f"{side}_bsb"), fields.get(f"{side}_account")
    if not isinstance(account, str):
        return None
    # A direct publisher's dead letter may carry anything in its BSB field too: it is masked like free text.
    return f"{mask_text(bsb)} {mask_account(account)}" if isinstance(bsb, str) else mask_account(account)


def _json_object(body: bytes) -> Mapping[str, Any]:
    """A dead letter's body may be anything a publisher sent: only a JSON object is read, never trusted."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}

"""A payment's records as events a person reads in order: what happened, when, and how long after the
step before. Error texts pass through the project's masking: no account number leaves here."""

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from sqlalchemy import Row

from app.bankfiles.outcomes import Outcome
from app.consumer.core_keys import FIRST_GENERATION, transfer_key
from app.deadletters.audit import DISCARD, REFUSE, REPLAY, RESOLVE
from app.deadletters.masking import mask_text
from app.deadletters.reasons import ALREADY_PROCESSED
from app.messaging.headers import PROPERTIES_UNREADABLE
from app.tracing import model as m
from app.tracing.records import Records
from contracts.amounts import amount_text

_AUDIT_STAGES = {REPLAY: m.REPLAYED, REFUSE: m.REPLAY_REFUSED, RESOLVE: m.RESOLVED, DISCARD: m.DISCARDED}
RETRYING = "retrying"  # delivery_attempts.outcome of a failure that goes round a delay queue


def in_order(events: Iterable[m.Event]) -> list[m.Event]:
    """By time, then by stage for events of the same instant; each with its delay since the one before."""
    ordered = sorted(events, key=lambda e: (e.at, m.STAGES.index(e.stage)))
    return [
        replace(e, after_seconds=None if i == 0 else round((e.at - ordered[i - 1].at).total_seconds(), 3))
        for i, e in enumerate(ordered)
    ]


def record_events(records: Records) -> list[m.Event]:
    events = _accepted(records.outbox)
    events += [_attempt(a) for a in records.attempts]
    events += [_dead_lettered(d) for d in records.dead_letters]
    events += [_acted(a) for a in records.audit]
    return events + _processed(records)


def rejection_events(rows: Iterable[Row[Any]]) -> list[m.Event]:
    """A row rejected at validation, traced itself: its own rejection."""
    return [
        m.Event(
            r.submitted_at,
            m.REJECTED,
            f"{_row(r)} rejected at validation: " + mask_text("; ".join(r.errors)),
            _rejection_details(r),
        )
        for r in rows
    ]


def same_reference_events(rows: Iterable[Row[Any]], booked: bool) -> list[m.Event]:
    """Other rows of the tenant's files that carried this payment's reference and were rejected at validation, on
    this payment's timeline: what each was (a duplicate of it refused, or a row with faults of its own), never a
    failure of this payment. `booked`: this payment was booked (once: its key is its idempotency record)."""
    events = []
    for r in rows:
        errors = mask_text("; ".join(r.errors))
        if r.outcome == Outcome.DUPLICATE:
            once = "; this payment was booked once" if booked else ""
            stage, summary = (
                m.DUPLICATE_REFUSED,
                f"{_row(r)} reused this payment's reference and was refused as a duplicate of this payment ({errors})"
                f": that row moved no money{once}",
            )
        else:
            stage, summary = (
                m.OTHER_ROW_REJECTED,
                f"{_row(r)}, another row with this payment's reference, was rejected at validation ({errors}): "
                "that row is not this payment",
            )
        events.append(m.Event(r.submitted_at, stage, summary, _rejection_details(r)))
    return events


def _row(r: Row[Any]) -> str:
    return f"row {r.row_number} of {r.source_name} (batch {r.correlation_id})"


def _rejection_details(r: Row[Any]) -> dict[str, Any]:
    return {
        "correlation_id": r.correlation_id,
        "source_name": r.source_name,
        "row_number": r.row_number,
        "errors": [mask_text(e) for e in r.errors],
    }


def _accepted(row: Row[Any] | None) -> list[m.Event]:
    if row is None:
        return []
    where = f"row {row.row_number} of {row.source_name}" if row.row_number is not None else row.source_name
    accepted = m.Event(
        row.accepted_at,
        m.ACCEPTED,
        f"accepted from {where} into batch {row.correlation_id}; written to the outbox",
        {
            "correlation_id": row.correlation_id,
            "source_name": row.source_name,
            "row_number": row.row_number,
            "seq": row.seq,
            "outbox_id": row.outbox_id,
            "expires_at": row.expires_at,
        },
    )
    if row.published_at is None:
        return [accepted]
    return [accepted, m.Event(row.published_at, m.PUBLISHED, "published; the broker confirmed it")]


def _attempt(a: Row[Any]) -> m.Event:
    error = mask_text(f"{a.error_type}: {a.error_message}") if a.error_message else a.error_type
    then = "retrying after a delay" if a.outcome == RETRYING else "dead-lettered"
    return m.Event(
        a.at,
        m.ATTEMPT_FAILED,
        f"attempt {a.attempt} failed ({error}); {then}",
        {"attempt": a.attempt, "outcome": a.outcome, "error": error, "queue": a.queue},
    )


def _dead_lettered(d: Row[Any]) -> m.Event:
    now = "already processed: booked, not money at risk" if d.status == ALREADY_PROCESSED else f"{d.status} now"
    unreadable = (d.headers or {}).get(PROPERTIES_UNREADABLE)
    said = f"; its AMQP properties were unreadable ({unreadable})" if unreadable else ""
    return m.Event(
        d.archived_at,
        m.DEAD_LETTERED,
        f"dead-lettered: {d.reason} after {d.attempts} attempt(s) (dead letter {d.dead_letter_id}, {now}){said}",
        {
            "dead_letter_id": d.dead_letter_id,
            "reason": d.reason,
            "status": d.status,
            "error": mask_text(f"{d.error_type}: {d.error_message}") if d.error_message else d.error_type,
            "attempts": d.attempts,
            "replay_of": d.replay_of,
        },
    )


def _acted(a: Row[Any]) -> m.Event:
    stage = _AUDIT_STAGES[a.action]
    # Notes and outcomes are free text a person typed or a rule wrote: masked like error messages.
    why, outcome = (mask_text(a.why) if a.why else None), mask_text(a.outcome)
    what = {
        m.REPLAYED: f"replayed by {a.actor}" + (", forced" if a.force else ""),
        m.REPLAY_REFUSED: f"replay asked by {a.actor} was refused: {outcome}",
        m.RESOLVED: f"resolved by {a.actor}: {outcome}",
        m.DISCARDED: f"discarded by {a.actor}",
    }[stage]
    return m.Event(
        a.at,
        stage,
        what + (f" (why: {why})" if why else ""),
        {
            "actor": a.actor,
            "why": why,
            "outcome": outcome,
            "dead_letter_id": a.dead_letter_id,
            "request_id": a.request_id,
            "force": a.force,
        },
    )


def _processed(records: Records) -> list[m.Event]:
    done, booked = records.processed, records.ledger
    if booked is None:
        if done is None:
            return []
        summary = f"idempotency record on attempt {done.attempt} without a booking (a reconciliation break)"
        return [m.Event(done.processed_at, m.PROCESSED, summary, {"attempt": done.attempt})]
    attempt = f" on attempt {done.attempt}" if done is not None else ""
    details: dict[str, Any] = {
        "attempt": done.attempt if done is not None else None,
        "ledger_transfer_id": booked.transfer_id,
        "booked_at": booked.booked_at,
    }
    where = f"ledger transfer {booked.transfer_id}"
    if done is not None and done.core_transfer_id is not None:  # the external core booked it; the row is remit's copy
        key = transfer_key(done.tenant_id, done.message_id, done.core_key_generation or FIRST_GENERATION)
        copy = f"remit's copy: ledger row {booked.transfer_id}"
        where = f"core transfer {done.core_transfer_id} in the external core (key {key}; {copy})"
        details |= {"core_transfer_id": done.core_transfer_id, "core_key": key, "core_booked_at": done.core_booked_at}
    return [
        m.Event(
            done.processed_at if done is not None else booked.booked_at,
            m.PROCESSED,
            f"processed{attempt}: booked as {where}, {amount_text(booked.amount_cents, booked.currency)}",
            details,
        )
    ]

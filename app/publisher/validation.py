"""Validate bulk rows into payment messages. Format rules come from the contract; business checks are
listed in validation_result.checks so the consumer knows what was verified."""

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError
from uuid6 import uuid7

from app.publisher.bulk_file import CONTROL, PAYMENT, RawRow
from contracts import PaymentMessage, wire_timestamp

CHECKS = ("format_valid", "currency_active", "limit_ok", "debtor_differs_from_creditor", "reference_unique")
_CENTS = re.compile(r"^[0-9]+$")
PAYMENT_FIELDS = (
    "payment_reference",
    "amount_cents",
    "currency",
    "debtor_bsb",
    "debtor_account",
    "creditor_bsb",
    "creditor_account",
)


@dataclass(frozen=True, slots=True)
class Rejection:
    row_number: int
    errors: list[str]
    payment_reference: str | None = None
    currency: str | None = None
    amount_cents: int | None = None


@dataclass(frozen=True, slots=True)
class ControlTotal:
    currency: str
    count: int
    amount_cents: int


@dataclass(slots=True)
class ValidatedBatch:
    accepted: list[PaymentMessage] = field(default_factory=list)
    row_numbers: list[int] = field(default_factory=list)  # the file line of each accepted message
    rejected: list[Rejection] = field(default_factory=list)
    controls: list[ControlTotal] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class BatchContext:
    tenant_id: str
    correlation_id: str
    now: datetime
    ttl_seconds: int
    max_amount_cents: int
    known_references: frozenset[str]


def validate_rows(rows: Iterable[RawRow], ctx: BatchContext) -> ValidatedBatch:
    batch = ValidatedBatch()
    first_seen: dict[str, int] = {}
    for row in rows:
        if row.record_type == CONTROL:
            _read_control(row, batch)
        elif row.record_type == PAYMENT:
            _read_payment(row, ctx, first_seen, batch)
        else:
            batch.rejected.append(Rejection(row.number, [f"record_type {row.record_type!r} is not payment/control"]))
    return batch


def _read_payment(row: RawRow, ctx: BatchContext, first_seen: dict[str, int], batch: ValidatedBatch) -> None:
    errors = _business_errors(row, ctx, first_seen)
    try:
        message = _build(row, ctx)
    except (ValidationError, ValueError) as exc:
        errors = _format_errors(exc) + errors
        message = None
    reference = row.fields.get("payment_reference")
    if isinstance(reference, str):
        first_seen.setdefault(reference, row.number)
    if errors or message is None:
        batch.rejected.append(_rejection(row, errors))
    else:
        batch.accepted.append(message)
        batch.row_numbers.append(row.number)


def _build(row: RawRow, ctx: BatchContext) -> PaymentMessage:
    if "__parse_error__" in row.fields:
        raise ValueError(row.fields["__parse_error__"])
    unknown = set(row.fields) - set(PAYMENT_FIELDS) - {"record_type"}
    if unknown:
        raise ValueError(f"unknown column(s): {', '.join(sorted(unknown))}")
    payload: dict[str, Any] = {k: row.fields.get(k) for k in PAYMENT_FIELDS if k in row.fields}
    if not row.typed:
        payload["amount_cents"] = _cents(payload.get("amount_cents"))
    return PaymentMessage.model_validate_json(_wire(payload, ctx))


def _wire(payload: dict[str, Any], ctx: BatchContext) -> bytes:
    return json.dumps(
        {
            "message_id": str(uuid7()),
            "timestamp_utc": wire_timestamp(ctx.now),
            "correlation_id": ctx.correlation_id,
            "tenant_id": ctx.tenant_id,
            **payload,
            "validation_result": {"passed": True, "checks": list(CHECKS)},
            "retry_count": 0,
            "ttl_seconds": ctx.ttl_seconds,
        }
    ).encode()


def _cents(value: Any) -> Any:
    # CSV carries text: accept only plain digits, so "1500.00" or "1e5" cannot slip through as cents.
    if isinstance(value, str):
        if not _CENTS.match(value):
            raise ValueError(f"amount_cents must be a whole number of cents, got {value!r}")
        return int(value)
    return value


def _business_errors(row: RawRow, ctx: BatchContext, first_seen: dict[str, int]) -> list[str]:
    errors = []
    reference = row.fields.get("payment_reference")
    if isinstance(reference, str):
        if reference in first_seen:
            errors.append(f"duplicate payment_reference {reference!r} (first seen at line {first_seen[reference]})")
        elif reference in ctx.known_references:
            errors.append(f"payment_reference {reference!r} was already accepted in an earlier batch")
    amount = row.fields.get("amount_cents")
    cents = int(amount) if isinstance(amount, str) and _CENTS.match(amount) else amount
    if isinstance(cents, int) and not isinstance(cents, bool) and cents > ctx.max_amount_cents:
        errors.append(f"amount_cents {cents} is over the per-payment limit of {ctx.max_amount_cents}")
    debtor = (row.fields.get("debtor_bsb"), row.fields.get("debtor_account"))
    if debtor[1] is not None and debtor == (row.fields.get("creditor_bsb"), row.fields.get("creditor_account")):
        errors.append("debtor and creditor are the same account")
    return errors


def _format_errors(exc: ValidationError | ValueError) -> list[str]:
    if isinstance(exc, ValidationError):
        return [f"{'.'.join(str(p) for p in e['loc']) or 'row'}: {e['msg']}" for e in exc.errors()]
    return [str(exc)]


def _rejection(row: RawRow, errors: list[str]) -> Rejection:
    amount = row.fields.get("amount_cents")
    return Rejection(
        row_number=row.number,
        errors=errors,
        payment_reference=_text(row.fields.get("payment_reference")),
        currency=_text(row.fields.get("currency")),
        amount_cents=int(amount) if isinstance(amount, str) and _CENTS.match(amount) else None,
    )


def _text(value: Any) -> str | None:
    return str(value)[:64] if value is not None else None


def _read_control(row: RawRow, batch: ValidatedBatch) -> None:
    try:
        batch.controls.append(
            ControlTotal(
                currency=str(row.fields["currency"]),
                count=int(row.fields["control_count"]),
                amount_cents=int(row.fields["amount_cents"]),
            )
        )
    except (KeyError, ValueError, TypeError):
        batch.rejected.append(
            Rejection(row.number, ["control record needs currency, control_count and amount_cents (integers)"])
        )

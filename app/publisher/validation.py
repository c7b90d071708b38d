"""Validate bulk rows into payment messages. Format rules come from the contract, business rules from
app/payment_rules.py (the consumer checks the same ones again); the checks ingress ran are listed in
validation_result.checks. What only ingress can check (a payment_reference used before) is here.

Two steps, so that a file can be validated as a stream of chunks: `check_rows` applies every rule that
needs only the row itself (CPU work, no I/O); `settle_references` then rejects references seen earlier in
the file or accepted in an earlier batch, which the caller looks up for the chunk's references only.
`validate_rows` does both for rows held in memory.
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from app.bankfiles.money import digit_count, too_many_digits, whole_number
from app.bankfiles.outcomes import Outcome
from app.bankfiles.rows import PARSE_ERROR
from app.payment_rules import INGRESS_CHECKS, PaymentRules, size_violation
from app.publisher.bulk_file import PAYMENT, PAYMENT_FIELDS, RawRow, expected_fields
from app.publisher.message_ids import new_message_id
from app.publisher.rejection_outcomes import rejection_outcome
from app.publisher.wire_body import WireBodies
from contracts import PaymentMessage
from contracts.message import ValidationResult

_CENTS = re.compile(r"^[0-9]+$")
_MAX_BIGINT = 2**63 - 1  # what an amount column (bigint) can hold
_ROW_FIELDS = frozenset({*PAYMENT_FIELDS, "record_type"})


@dataclass(frozen=True, slots=True)
class Rejection:
    row_number: int
    errors: list[str]
    payment_reference: str | None = None
    currency: str | None = None
    amount_cents: int | None = None
    outcome: Outcome = Outcome.INVALID  # what its status report says (duplicate, invalid_account, ...)


@dataclass(slots=True)
class ValidatedBatch:
    accepted: list[PaymentMessage] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)  # each accepted message's wire body, as published
    rows: list[RawRow] = field(default_factory=list)  # the row each accepted message came from
    rejected: list[Rejection] = field(default_factory=list)

    @property
    def row_numbers(self) -> list[int]:
        """The file line (or transaction position) of each accepted message."""
        return [row.number for row in self.rows]


@dataclass(frozen=True, slots=True)
class BatchContext:
    tenant_id: str
    correlation_id: str
    now: datetime
    ttl_seconds: int
    rules: PaymentRules
    max_message_bytes: int  # the tenant's
    known_references: frozenset[str]  # references accepted in earlier batches (of the rows at hand, at least)


@dataclass(frozen=True, slots=True)
class CheckedRow:
    """A row after every rule that needs only the row itself: a message and its body, or errors."""

    row: RawRow
    message: PaymentMessage | None = None
    body: bytes | None = None
    errors: list[str] = field(default_factory=list)

    @property
    def reference(self) -> str | None:
        reference = self.row.fields.get("payment_reference") if self.row.record_type == PAYMENT else None
        return reference if isinstance(reference, str) else None


def validate_rows(
    rows: Iterable[RawRow], ctx: BatchContext, earlier: Mapping[str, int] | None = None
) -> ValidatedBatch:
    """Validate rows held in memory. `earlier`: references seen before these rows in the same file, with
    the row they were first seen at (a file validated chunk by chunk passes what earlier chunks held)."""
    return settle_references(check_rows(rows, ctx), ctx.known_references, earlier or {})


def check_rows(rows: Iterable[RawRow], ctx: BatchContext) -> list[CheckedRow]:
    shared = _Fields(ctx)
    return [_check(row, ctx, shared) for row in rows]


def settle_references(
    checked: Iterable[CheckedRow], known: frozenset[str], earlier: Mapping[str, int]
) -> ValidatedBatch:
    """Reject references seen earlier in the file (`earlier`, then these rows in order) or in `known`."""
    batch = ValidatedBatch()
    first_seen = dict(earlier)
    for item in checked:
        errors = list(item.errors)
        reference = item.reference
        if reference is not None:
            errors = _reference_errors(reference, known, first_seen) + errors
            first_seen.setdefault(reference, item.row.number)
        if errors or item.message is None or item.body is None:
            batch.rejected.append(_rejection(item.row, errors))
        else:
            batch.accepted.append(item.message)
            batch.bodies.append(item.body)
            batch.rows.append(item.row)
    return batch


def _check(row: RawRow, ctx: BatchContext, shared: "_Fields") -> CheckedRow:
    record_type = row.record_type
    if record_type != PAYMENT:  # a control record is its reader's (app/bankfiles/control_totals.py), never a row
        return CheckedRow(row, errors=[f"record_type {record_type!r} is not payment/control"])
    try:
        message = shared.message(_payload(row))
    except (ValidationError, ValueError) as exc:
        return CheckedRow(row, errors=_format_errors(exc))
    body = shared.body(message)
    errors = ctx.rules.violations(message, ctx.now)
    oversize = size_violation(len(body), ctx.max_message_bytes)
    if oversize:
        errors.append(oversize)
    return CheckedRow(row, message, body, errors)


def _payload(row: RawRow) -> Mapping[str, Any]:
    fields = row.fields
    if PARSE_ERROR in fields:
        raise ValueError(fields[PARSE_ERROR])
    if not _ROW_FIELDS.issuperset(fields):
        unknown = set(fields) - _ROW_FIELDS
        raise ValueError(f"unknown column(s): {', '.join(sorted(unknown))}; the columns are: {expected_fields()}")
    if row.typed and "record_type" not in fields:
        return fields  # typed payment fields only: validated as they are, not copied
    payload: dict[str, Any] = {k: fields[k] for k in PAYMENT_FIELDS if k in fields}
    if not row.typed:
        payload["amount_cents"] = _cents(payload.get("amount_cents"))
    return payload


class _Fields:
    """The fields every message of a batch shares. A row's message is validated from Python values (the
    contract's own strict validation, which JSON rows' values pass exactly as their JSON would): encoding
    each row to JSON only to parse it back cost more than the validation itself. The validation result is
    the same for every row: validated once here, its instance passes each row's strict validation as is
    (a quarter of model_validate's time was re-validating it)."""

    def __init__(self, ctx: BatchContext) -> None:
        self.envelope = {"timestamp_utc": ctx.now, "correlation_id": ctx.correlation_id, "tenant_id": ctx.tenant_id}
        self.control = {
            "validation_result": ValidationResult(passed=True, checks=list(INGRESS_CHECKS)),
            "retry_count": 0,
            "ttl_seconds": ctx.ttl_seconds,
        }
        self.body = WireBodies()

    def message(self, payload: Mapping[str, Any]) -> PaymentMessage:
        return PaymentMessage.model_validate(
            {"message_id": new_message_id(), **self.envelope, **payload, **self.control}
        )


def _cents(value: Any) -> Any:
    # CSV carries text: accept only plain digits, so "1500.00" or "1e5" cannot slip through as cents; and no
    # more of them than an amount can have, counted before anything is converted.
    if isinstance(value, str):
        cents = whole_number(value)
        if cents is None and _CENTS.fullmatch(value):
            raise ValueError(too_many_digits("amount_cents", digit_count(value)))
        if cents is None:
            raise ValueError(f"amount_cents must be a whole number of cents, got {value[:24]!r}")
        return cents
    return value


def _reference_errors(reference: str, known: frozenset[str], first_seen: Mapping[str, int]) -> list[str]:
    if reference in first_seen:
        return [f"duplicate payment_reference {reference!r} (first seen at line {first_seen[reference]})"]
    if reference in known:
        return [f"payment_reference {reference!r} was already accepted in an earlier batch"]
    return []


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
        amount_cents=_amount(amount),
        outcome=rejection_outcome(errors),
    )


def _amount(value: Any) -> int | None:
    # Typed rows (JSON, pain.001, ABA) carry an int; CSV cells are text. A bool is not an amount.
    if isinstance(value, str):
        value = whole_number(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _MAX_BIGINT:
        return value
    return None


def _text(value: Any) -> str | None:
    return str(value)[:64] if value is not None else None

"""Ingress applies the shared business rules to every row: a row that breaks one is rejected with the
rule's sentence (the tenant's message size included), and an accepted one lists the checks ingress ran."""

from datetime import UTC, datetime
from typing import Any

from app.payment_rules import PaymentRules
from app.publisher.bulk_file import RawRow
from app.publisher.validation import BatchContext, validate_rows
from app.settings import Settings
from tests.utils.factories import CHECKS

NOW = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)


def _row(number: int, **overrides: Any) -> RawRow:
    fields = {
        "payment_reference": f"REF-{number}",
        "amount_cents": 1500,
        "currency": "AUD",
        "debtor_bsb": "012-345",
        "debtor_account": "123456789",
        "creditor_bsb": "033-001",
        "creditor_account": "987654321",
    }
    return RawRow(number, {**fields, **overrides})


def _context(max_message_bytes: int = 65_536, ttl_seconds: int = 86_400) -> BatchContext:
    return BatchContext(
        tenant_id="anz",
        correlation_id="bulk_anz_20261123_batch_0001",
        now=NOW,
        ttl_seconds=ttl_seconds,
        rules=PaymentRules.from_settings(Settings()),
        max_message_bytes=max_message_bytes,
        known_references=frozenset(),
    )


def test_an_accepted_row_carries_the_checks_ingress_ran() -> None:
    [message] = validate_rows([_row(2)], _context()).accepted
    assert message.validation_result.checks == list(CHECKS)


def test_rows_breaking_a_business_rule_are_rejected_with_its_sentence() -> None:
    rows = [
        _row(2),
        _row(3, amount_cents=100_000_001),
        _row(4, creditor_bsb="012-345", creditor_account="123456789"),
        _row(5, amount_cents=100_000_000),
    ]
    batch = validate_rows(rows, _context())
    assert batch.row_numbers == [2, 5]
    assert [(r.row_number, r.errors) for r in batch.rejected] == [
        (3, ["amount_cents 100000001 is over the per-payment limit of 100000000"]),
        (4, ["debtor and creditor are the same account"]),
    ]


def test_a_tenant_ttl_over_the_bound_rejects_its_rows() -> None:
    batch = validate_rows([_row(2)], _context(ttl_seconds=604_801))
    assert batch.rejected[0].errors == ["ttl_seconds 604801 is over the limit of 604800"]


def test_oversize_messages_are_rejected_with_their_size_and_the_limit() -> None:
    [message] = validate_rows([_row(2)], _context()).accepted
    size = len(message.to_wire())
    at_the_limit = validate_rows([_row(2)], _context(max_message_bytes=size))
    assert len(at_the_limit.accepted) == 1
    over = validate_rows([_row(2)], _context(max_message_bytes=size - 1))
    assert over.accepted == []
    assert over.rejected[0].errors == [f"the message is {size} bytes, over the tenant's limit of {size - 1}"]

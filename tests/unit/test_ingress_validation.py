"""Ingress validation (app/publisher/validation.py) row by row, in memory: what a CSV or JSON row must be to
become a payment message, what a rejection reports, control records and repeated references.

Every limit is written out here: the per-payment amount limit of the default settings is 100 000 000 cents,
a CSV amount is plain digits, a control record's count fits an integer column (2**31 - 1) and its amount a
bigint column (2**63 - 1).
"""

from datetime import UTC, datetime
from typing import Any

import pytest

from app.bankfiles.outcomes import Outcome
from app.bankfiles.rows import PARSE_ERROR
from app.payment_rules import PaymentRules
from app.publisher.bulk_file import RawRow
from app.publisher.validation import BatchContext, Rejection, validate_rows
from app.settings import Settings

NOW = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)
CONTEXT = BatchContext(
    tenant_id="acme",
    correlation_id="bulk_acme_20261123_batch_0001",
    now=NOW,
    ttl_seconds=3600,
    rules=PaymentRules.from_settings(Settings()),
    max_message_bytes=65_536,
    known_references=frozenset({"PAID-BEFORE"}),
)
FIVE_CHECKS = ["format_valid", "currency_active", "limit_ok", "debtor_differs_from_creditor", "reference_unique"]


def _fields(**overrides: Any) -> dict[str, Any]:
    fields = {
        "payment_reference": "REF-1",
        "amount_cents": "1500",
        "currency": "AUD",
        "debtor_bsb": "012-345",
        "debtor_account": "123456789",
        "creditor_bsb": "033-001",
        "creditor_account": "987654321",
    }
    return {**fields, **overrides}


def _csv(number: int = 2, **overrides: Any) -> RawRow:
    return RawRow(number, _fields(**overrides), typed=False)


def _one_rejection(row: RawRow) -> Rejection:
    batch = validate_rows([row], CONTEXT)
    assert batch.accepted == []
    [rejection] = batch.rejected
    return rejection


def _errors(row: RawRow) -> list[str]:
    return _one_rejection(row).errors


# ---------------------------------------------------------------- an accepted row


def test_an_accepted_row_becomes_the_message_ingress_publishes() -> None:
    batch = validate_rows([_csv(7)], CONTEXT)
    [message] = batch.accepted
    assert batch.rejected == []
    assert batch.row_numbers == [7]
    assert batch.bodies == [message.to_wire()]
    assert (message.tenant_id, message.correlation_id, message.timestamp_utc) == (
        "acme",
        "bulk_acme_20261123_batch_0001",
        NOW,
    )
    assert (message.retry_count, message.ttl_seconds) == (0, 3600)
    assert message.validation_result.passed is True
    assert message.validation_result.checks == FIVE_CHECKS
    assert (message.payment_reference, message.amount_cents, message.currency) == ("REF-1", 1500, "AUD")
    assert (message.debtor_bsb, message.debtor_account) == ("012-345", "123456789")
    assert (message.creditor_bsb, message.creditor_account) == ("033-001", "987654321")


def test_each_row_gets_its_own_message_id() -> None:
    batch = validate_rows([_csv(2), _csv(3, payment_reference="REF-2")], CONTEXT)
    assert len({m.message_id for m in batch.accepted}) == 2


# ---------------------------------------------------------------- the business rules, on rows


@pytest.mark.parametrize(("amount", "accepted"), [("99999999", True), ("100000000", True), ("100000001", False)])
def test_the_per_payment_amount_limit(amount: str, accepted: bool) -> None:
    batch = validate_rows([_csv(amount_cents=amount)], CONTEXT)
    assert len(batch.accepted) == int(accepted)
    if not accepted:
        assert batch.rejected[0].errors == ["amount_cents 100000001 is over the per-payment limit of 100000000"]
        assert batch.rejected[0].outcome is Outcome.OVER_LIMIT


def test_debtor_and_creditor_must_differ() -> None:
    rejection = _one_rejection(_csv(creditor_bsb="012-345", creditor_account="123456789"))
    assert rejection.errors == ["debtor and creditor are the same account"]


@pytest.mark.parametrize(("limit", "accepted"), [(1, False), (0, True)])  # bytes over (1) or at (0) the limit
def test_the_tenants_message_size(limit: int, accepted: bool) -> None:
    [message] = validate_rows([_csv()], CONTEXT).accepted
    size = len(message.to_wire())
    context = BatchContext(**{**_context_fields(), "max_message_bytes": size - limit})
    batch = validate_rows([_csv()], context)
    assert len(batch.accepted) == int(accepted)
    if not accepted:
        assert batch.rejected[0].errors == [f"the message is {size} bytes, over the tenant's limit of {size - 1}"]


def _context_fields() -> dict[str, Any]:
    return {name: getattr(CONTEXT, name) for name in CONTEXT.__slots__}


def test_every_broken_rule_of_a_row_is_reported() -> None:
    row = _csv(amount_cents="100000001", creditor_bsb="012-345", creditor_account="123456789")
    assert _errors(row) == [
        "amount_cents 100000001 is over the per-payment limit of 100000000",
        "debtor and creditor are the same account",
    ]


# ---------------------------------------------------------------- what a row may hold


def test_an_unknown_column_is_refused_by_name() -> None:
    row = _csv(iban="GB33BUKB20201555555555", memo="rent")
    [error] = _errors(row)
    assert error.startswith("unknown column(s): iban, memo")


def test_the_record_type_column_is_known() -> None:
    assert len(validate_rows([_csv(record_type="payment")], CONTEXT).accepted) == 1


def test_a_row_of_another_record_type_is_refused() -> None:
    assert _errors(_csv(record_type="footer")) == ["record_type 'footer' is not payment/control"]


def test_a_row_the_reader_could_not_parse_is_refused_with_its_reason() -> None:
    row = RawRow(4, {**_fields(), PARSE_ERROR: "amount 12.345 has more decimal places than AUD allows"})
    rejection = _one_rejection(row)
    assert rejection.errors == ["amount 12.345 has more decimal places than AUD allows"]
    assert rejection.outcome is Outcome.AMOUNT_PRECISION


@pytest.mark.parametrize("amount", ["1500.00", "1e5", "-1500", " 1500", "1,500", "", "١٥٠٠"])
def test_a_csv_amount_is_plain_digits(amount: str) -> None:
    assert _errors(_csv(amount_cents=amount)) == [f"amount_cents must be a whole number of cents, got {amount!r}"]


def test_a_typed_amount_is_the_contracts_to_judge() -> None:
    """JSON rows keep their types: a string there is refused by the contract itself, not read as digits."""
    typed = RawRow(2, _fields(amount_cents=1500))
    assert validate_rows([typed], CONTEXT).accepted[0].amount_cents == 1500
    as_text = RawRow(2, _fields(amount_cents="1500"))
    assert _errors(as_text) == ["amount_cents: Input should be a valid integer"]


def test_a_contract_error_names_its_field() -> None:
    assert _errors(_csv(debtor_bsb="012345")) == ["debtor_bsb: String should match pattern '^[0-9]{3}-[0-9]{3}$'"]


def test_a_missing_column_is_named() -> None:
    fields = _fields()
    del fields["currency"]
    assert _errors(RawRow(2, fields, typed=False)) == ["currency: Field required"]


# ---------------------------------------------------------------- what a rejection reports


def test_a_rejection_carries_what_the_row_said() -> None:
    row = _csv(9, amount_cents="100000001", currency="NZD")
    assert _one_rejection(row) == Rejection(
        row_number=9,
        errors=["amount_cents 100000001 is over the per-payment limit of 100000000"],
        payment_reference="REF-1",
        currency="NZD",
        amount_cents=100_000_001,
        outcome=Outcome.OVER_LIMIT,
    )


@pytest.mark.parametrize(
    ("amount", "reported"),
    [
        ("0", 0),
        ("abc", None),
        (-1, None),
        (True, None),  # a bool is not an amount
        (2**63 - 1, 2**63 - 1),  # the largest a bigint column holds
        (2**63, None),
        (1.5, None),
    ],
)
def test_a_rejection_reports_an_amount_only_if_it_is_one(amount: Any, reported: int | None) -> None:
    row = RawRow(2, _fields(amount_cents=amount, creditor_account="1"), typed=not isinstance(amount, str))
    assert _one_rejection(row).amount_cents == reported


def test_a_rejection_reports_at_most_64_characters_of_text() -> None:
    row = _csv(payment_reference="R" * 100, currency="C" * 70)
    rejection = _one_rejection(row)
    assert rejection.payment_reference == "R" * 64
    assert rejection.currency == "C" * 64


def test_a_rejection_without_those_columns_reports_none() -> None:
    rejection = _one_rejection(RawRow(2, {"debtor_bsb": "012-345"}, typed=False))
    assert (rejection.payment_reference, rejection.currency, rejection.amount_cents) == (None, None, None)


# ---------------------------------------------------------------- references used before


def test_a_reference_repeated_in_the_file_is_refused_after_its_first_row() -> None:
    rows = [_csv(2, payment_reference="A"), _csv(3, payment_reference="B"), _csv(5, payment_reference="A")]
    batch = validate_rows(rows, CONTEXT)
    assert batch.row_numbers == [2, 3]
    [rejection] = batch.rejected
    assert rejection.errors == ["duplicate payment_reference 'A' (first seen at line 2)"]
    assert rejection.outcome is Outcome.DUPLICATE


def test_a_reference_is_first_seen_at_its_first_row_even_when_that_row_was_rejected() -> None:
    rows = [
        _csv(2, payment_reference="A", amount_cents="x"),
        _csv(3, payment_reference="A"),
        _csv(4, payment_reference="A"),
    ]
    batch = validate_rows(rows, CONTEXT)
    assert batch.accepted == []
    assert [r.errors[0] for r in batch.rejected] == [
        "amount_cents must be a whole number of cents, got 'x'",
        "duplicate payment_reference 'A' (first seen at line 2)",
        "duplicate payment_reference 'A' (first seen at line 2)",
    ]


def test_a_reference_seen_in_an_earlier_chunk_of_the_file_is_refused() -> None:
    batch = validate_rows([_csv(900, payment_reference="A")], CONTEXT, earlier={"A": 17})
    assert batch.rejected[0].errors == ["duplicate payment_reference 'A' (first seen at line 17)"]


def test_a_reference_accepted_in_an_earlier_batch_is_refused() -> None:
    rejection = _one_rejection(_csv(payment_reference="PAID-BEFORE"))
    assert rejection.errors == ["payment_reference 'PAID-BEFORE' was already accepted in an earlier batch"]
    assert rejection.outcome is Outcome.DUPLICATE


def test_the_duplicate_comes_first_among_a_rows_errors() -> None:
    rows = [_csv(2, payment_reference="A"), _csv(3, payment_reference="A", amount_cents="100000001")]
    assert validate_rows(rows, CONTEXT).rejected[0].errors == [
        "duplicate payment_reference 'A' (first seen at line 2)",
        "amount_cents 100000001 is over the per-payment limit of 100000000",
    ]


def test_a_reference_that_is_not_text_is_not_tracked() -> None:
    typed = _fields(payment_reference=12345, amount_cents=1500)
    rows = [RawRow(2, typed), RawRow(3, typed)]
    batch = validate_rows(rows, CONTEXT)
    assert [r.errors for r in batch.rejected] == [["payment_reference: Input should be a valid string"]] * 2


# ---------------------------------------------------------------- control records


def test_a_control_record_is_its_readers_never_a_payment_row() -> None:
    """The readers keep control records (app/bankfiles/control_totals.py) and never hand one on: one given to
    validation anyway is not a payment."""
    control = RawRow(10, {"record_type": "control", "currency": "AUD", "control_count": "1", "amount_cents": "1"})
    assert _errors(control) == ["record_type 'control' is not payment/control"]

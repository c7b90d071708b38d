"""The business rules ingress and the consumer share, at, just below and just above each boundary."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.payment_rules import PaymentRules, size_violation
from app.settings import Settings
from tests.utils.factories import CHECKS, make_message

NOW = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)
RULES = PaymentRules.from_settings(Settings())  # the defaults, spelled out in each case below
FIVE_CHECKS = list(CHECKS)  # the five ingress runs, written out in tests/utils/factories.py


def violations(**overrides: Any) -> list[str]:
    return RULES.violations(make_message(**{"timestamp_utc": NOW, **overrides}), NOW)


def test_the_defaults() -> None:
    assert (
        PaymentRules(
            max_amount_cents=100_000_000,
            max_clock_skew=timedelta(seconds=300),
            max_ttl_seconds=604_800,
            required_checks=frozenset(),
        )
        == RULES
    )


def test_a_valid_payment_breaks_no_rule() -> None:
    assert violations() == []


@pytest.mark.parametrize(
    ("amount", "refused"),
    [(99_999_999, False), (100_000_000, False), (100_000_001, True), (10**14, True)],
)
def test_the_amount_limit(amount: int, refused: bool) -> None:
    expected = [f"amount_cents {amount} is over the per-payment limit of 100000000"] if refused else []
    assert violations(amount_cents=amount) == expected


def test_debtor_and_creditor_must_differ() -> None:
    same = {"debtor_bsb": "012-345", "debtor_account": "123456789", "creditor_bsb": "012-345"}
    assert violations(**same, creditor_account="123456789") == ["debtor and creditor are the same account"]
    assert violations(**same, creditor_account="123456788") == []  # same branch, another account
    assert violations(**{**same, "creditor_bsb": "012-346"}, creditor_account="123456789") == []


@pytest.mark.parametrize(
    ("ahead", "refused"),
    [
        (timedelta(seconds=299), False),
        (timedelta(seconds=300), False),
        (timedelta(seconds=300, microseconds=1), True),
        (timedelta(days=365 * 73), True),
        (-timedelta(days=1), False),  # the past is the TTL's business
    ],
)
def test_the_clock_skew_bound(ahead: timedelta, refused: bool) -> None:
    errors = violations(timestamp_utc=NOW + ahead)
    assert bool(errors) is refused
    if refused:
        assert errors[0].startswith("timestamp_utc is ")
        assert errors[0].endswith("over the 300 s clock-skew bound")


def test_a_year_2099_timestamp_says_how_far_ahead_it_is() -> None:
    [error] = violations(timestamp_utc=datetime(2099, 1, 1, tzinfo=UTC))
    seconds = int((datetime(2099, 1, 1, tzinfo=UTC) - NOW).total_seconds())
    assert error == f"timestamp_utc is {seconds} s in the future, over the 300 s clock-skew bound"


@pytest.mark.parametrize(("ttl", "refused"), [(604_799, False), (604_800, False), (604_801, True)])
def test_the_ttl_bound(ttl: int, refused: bool) -> None:
    assert violations(ttl_seconds=ttl) == ([f"ttl_seconds {ttl} is over the limit of 604800"] if refused else [])


REFERENCE_004_CHECKS = ["customer_exists", "bsb_valid", "limit_ok"]  # the message design's own example


def test_by_default_check_names_are_recorded_not_required() -> None:
    """Issue 37, item 6: the names are the publisher's claim; the rules above are what protect the ledger."""
    for checks in (REFERENCE_004_CHECKS, FIVE_CHECKS, [], ["anything_at_all"]):
        assert violations(validation_result={"passed": True, "checks": checks}) == []


def test_every_required_check_must_be_named_when_some_are_required() -> None:
    rules = PaymentRules.from_settings(Settings(required_checks=FIVE_CHECKS))

    def missing(checks: list[str]) -> list[str]:
        payment = make_message(timestamp_utc=NOW, validation_result={"passed": True, "checks": checks})
        return rules.violations(payment, NOW)

    assert missing(FIVE_CHECKS) == []
    assert missing([*FIVE_CHECKS, "customer_exists"]) == []
    assert missing(FIVE_CHECKS[:-1]) == ["validation_result.checks lacks the required check(s) reference_unique"]
    assert missing([]) == [
        "validation_result.checks lacks the required check(s) currency_active, debtor_differs_from_creditor, "
        "format_valid, limit_ok, reference_unique"
    ]
    assert missing(REFERENCE_004_CHECKS) == [
        "validation_result.checks lacks the required check(s) currency_active, debtor_differs_from_creditor, "
        "format_valid, reference_unique"
    ]


def test_a_payment_the_publisher_failed_is_refused() -> None:
    assert violations(validation_result={"passed": False, "checks": FIVE_CHECKS}) == [
        "validation_result.passed is false: the publisher did not validate this payment"
    ]


def test_every_broken_rule_is_reported() -> None:
    errors = violations(
        amount_cents=100_000_001, ttl_seconds=604_801, validation_result={"passed": False, "checks": []}
    )
    assert len(errors) == 3


@pytest.mark.parametrize(("size", "refused"), [(511, False), (512, False), (513, True)])
def test_the_tenants_message_size(size: int, refused: bool) -> None:
    expected = f"the message is {size} bytes, over the tenant's limit of 512" if refused else None
    assert size_violation(size, 512) == expected

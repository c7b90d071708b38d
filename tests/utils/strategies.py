"""Hypothesis strategies producing valid wire-contract values, built from the contract's own constants."""

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

from contracts import PaymentMessage, ValidationResult
from contracts.currency import active_currency_codes
from contracts.message import (
    ACCOUNT_PATTERN,
    BSB_PATTERN,
    CHECK_NAME_PATTERN,
    CORRELATION_ID_PATTERN,
    MAX_AMOUNT_CENTS,
    MAX_TTL_SECONDS,
    PAYMENT_REFERENCE_PATTERN,
    TENANT_ID_PATTERN,
)


def _matching(pattern: str) -> st.SearchStrategy[str]:
    return st.from_regex(pattern, fullmatch=True)


tenant_ids = _matching(TENANT_ID_PATTERN)
correlation_ids = _matching(CORRELATION_ID_PATTERN)
payment_references = _matching(PAYMENT_REFERENCE_PATTERN)
bsbs = _matching(BSB_PATTERN)
accounts = _matching(ACCOUNT_PATTERN)
check_names = _matching(CHECK_NAME_PATTERN)
currencies = st.sampled_from(sorted(active_currency_codes()))
amounts_cents = st.integers(min_value=1, max_value=MAX_AMOUNT_CENTS)
retry_counts = st.integers(min_value=0, max_value=100)
ttls_seconds = st.integers(min_value=1, max_value=MAX_TTL_SECONDS)

# Aware datetimes at offset zero, from more than one tzinfo implementation; the contract normalises to UTC.
utc_timestamps = st.datetimes(
    min_value=datetime(1970, 1, 1),
    max_value=datetime(9999, 12, 30),
    timezones=st.sampled_from([UTC, timezone(timedelta(0), "Z")]),
)

validation_results = st.builds(
    ValidationResult,
    passed=st.booleans(),
    checks=st.lists(check_names, max_size=32),
)


def payment_messages() -> st.SearchStrategy[PaymentMessage]:
    """Any valid PaymentMessage."""
    return st.builds(
        PaymentMessage,
        message_id=st.uuids(),
        timestamp_utc=utc_timestamps,
        correlation_id=correlation_ids,
        tenant_id=tenant_ids,
        payment_reference=payment_references,
        amount_cents=amounts_cents,
        currency=currencies,
        debtor_bsb=bsbs,
        debtor_account=accounts,
        creditor_bsb=bsbs,
        creditor_account=accounts,
        validation_result=validation_results,
        retry_count=retry_counts,
        ttl_seconds=ttls_seconds,
    )


def wire_dicts() -> st.SearchStrategy[dict[str, Any]]:
    """Any valid message as the JSON-decoded dict found on the wire."""
    return payment_messages().map(lambda message: json.loads(message.to_wire()))

"""The one exception tree: message failures keep their wire reasons; caller errors reach the CLI and the
HTTP API through one table each. Expected codes are written out here, not read from app/errors.py."""

import pytest

from app.errors import (
    BatchNotFound,
    BatchRefused,
    CallerError,
    DeadLetterNotFound,
    DiscardRefused,
    FileRefused,
    ForceRefused,
    LimitExceeded,
    MessageFailure,
    PermanentError,
    RemitError,
    ReplayRefused,
    RetentionTooShort,
    RetryableError,
    ServiceUnavailable,
    UnknownTenant,
    UsageError,
    exit_code,
    http_status,
)


@pytest.mark.parametrize(
    ("error", "code", "status"),
    [
        (UsageError("bad value"), 2, 422),
        (BatchRefused("already submitted"), 2, 422),
        (FileRefused("truncated"), 2, 422),
        (ReplayRefused("say what to replay"), 2, 422),
        (RetentionTooShort("too short"), 2, 422),
        (DeadLetterNotFound("no dead letter 7"), 2, 404),
        (BatchNotFound("no batch"), 2, 404),
        (UnknownTenant("unknown tenant 'x'"), 2, 404),
        (ForceRefused("tenant keys may not force"), 2, 403),
        (DiscardRefused("not open"), 2, 409),
        (LimitExceeded("over its publish rate", 3.0), 2, 429),
        (ServiceUnavailable("PostgreSQL is not reachable"), 75, 503),
    ],
)
def test_each_caller_error_has_one_exit_code_and_one_http_status(error: CallerError, code: int, status: int) -> None:
    assert (exit_code(error), http_status(error)) == (code, status)


def _all(kind: type[MessageFailure]) -> set[type[MessageFailure]]:
    found = {kind}
    for sub in kind.__subclasses__():
        found |= _all(sub)
    return found


def test_every_permanent_failure_keeps_its_dead_letter_reason() -> None:
    reasons = {kind.__name__: kind.reason for kind in _all(PermanentError)}
    assert reasons == {
        "PermanentError": "permanent_failure",
        "InvalidMessage": "invalid",
        "MessageTooLarge": "oversize",
        "RefusedByDatabase": "invalid",
        "OverTenantLimit": "over_limit",
        "TenantSuspended": "tenant_suspended",
        "ConflictingDuplicate": "duplicate_conflict",
        "TenantMismatch": "tenant_mismatch",
        "UnknownTenant": "unknown_tenant",
        "CoreRefusal": "permanent_failure",
        "AccountClosed": "account_closed",
        "UnknownAccount": "unknown_account",
        "InsufficientFunds": "insufficient_funds",
        "CurrencyNotHeld": "currency_not_held",
        "TransferKeyConflict": "core_key_conflict",
        "MessageExpired": "expired",
        "UnreadableProperties": "unreadable_properties",
    }
    assert not any(kind.retryable for kind in _all(PermanentError))
    assert all(kind.retryable for kind in _all(RetryableError))


def test_the_base_decides_nothing_and_the_branches_stay_apart() -> None:
    assert not hasattr(RemitError, "retryable")  # an error of no branch is neither retried nor dead-lettered
    assert not issubclass(ServiceUnavailable, MessageFailure)
    assert not issubclass(RetryableError, CallerError)
    # The one error in both: a message naming an unknown tenant is dead-lettered, a caller naming one is told.
    shared = [kind.__name__ for kind in _all(MessageFailure) if issubclass(kind, CallerError)]
    assert shared == ["UnknownTenant"]


@pytest.mark.parametrize(("seconds", "header"), [(0.2, 1), (1.0, 1), (1.2, 2), (19.9, 20), (20.0, 20)])
def test_retry_after_is_whole_seconds_rounded_up_and_at_least_one(seconds: float, header: int) -> None:
    assert LimitExceeded("over", seconds).retry_after == header

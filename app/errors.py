"""The one exception tree, in two branches that never mix:

- `MessageFailure`: why one payment message was not processed. The consumer retries a retryable one through
  the delay queues and dead-letters a permanent one at once, under its `reason` (a wire value: the
  `remit-reason` header and the dead-letter store keep it, operators filter on it).
- `CallerError`: a person or a client (the CLI, the admin API) asked for something that cannot be done; its
  text says why and what to do instead. `EXIT_CODES` and `HTTP_STATUSES` below are the only places that
  decide how one reaches its caller.

`UnknownTenant` is in both: a message naming a tenant remit does not know is dead-lettered `unknown_tenant`,
and a caller naming one is told it was not found.
"""

import math
from http import HTTPStatus
from typing import ClassVar, Final


class RemitError(Exception):
    """Base of every error remit raises on purpose; never raised itself."""


# ---------------------------------------------------------------- message failures


class MessageFailure(RemitError):
    """Why one payment message was not processed."""

    retryable: ClassVar[bool]
    reason: ClassVar[str]  # the dead-letter reason; a retryable failure that runs out is `retries_exhausted`


class RetryableError(MessageFailure):
    """Worth trying again later: a dependency was unavailable or slow."""

    retryable = True
    reason = "retryable"


class CommitFailed(RetryableError):
    """The group commit could not run (PostgreSQL unreachable, the connection lost, the committer stopping):
    nothing was committed for these payments."""

    reason = "commit_failed"


class CoreBankingTimeout(RetryableError):
    reason = "core_banking_timeout"


class CoreBankingUnavailable(RetryableError):
    """The core did not book the transfer: it could not be reached, or it answered that the key is unknown."""

    reason = "core_banking_unavailable"


class CoreOutcomeUnknown(RetryableError):
    """The transfer may or may not be booked and the core could not be asked: resent later with the same key,
    which the core answers with its recorded outcome if it has one."""

    reason = "core_outcome_unknown"


class TransferInProgress(RetryableError):
    """The core is still booking an earlier request with this key: ask again later."""

    reason = "core_transfer_in_progress"


class CircuitOpen(RetryableError):
    """The core failed too often in a row: nothing is sent until a probe finds it ready again."""

    reason = "core_banking_circuit_open"


class PermanentError(MessageFailure):
    """Trying again cannot help: the message or its target is wrong."""

    retryable = False
    reason = "permanent_failure"


class InvalidMessage(PermanentError):
    reason = "invalid"


class MessageTooLarge(InvalidMessage):
    """Over the tenant's maximum message size or the consumer's hard cap (then only a prefix was kept)."""

    reason = "oversize"


class UnreadableProperties(InvalidMessage):
    """Its AMQP properties or headers could not be read (app/messaging/amqp_guard.py): settled on its own, never
    a closed connection; what could be read (its publisher's user_id) still decides whose it is."""

    reason = "unreadable_properties"


class RefusedByDatabase(InvalidMessage):
    """PostgreSQL refused this payment's own rows (a constraint, a value): trying again cannot help."""


class OverTenantLimit(PermanentError):
    """A direct publisher over its tenant's publish rate or in-flight limit: the publish was not admitted."""

    reason = "over_limit"


class TenantSuspended(PermanentError):
    """A suspended tenant's own publish: not processed while the tenant is suspended."""

    reason = "tenant_suspended"


class ConflictingDuplicate(PermanentError):
    """Its tenant already used this message_id for a different payment: it is not a duplicate, and
    processing it under that id could never be told apart from the first. Resubmit it with a new id."""

    reason = "duplicate_conflict"

    def __init__(self, message: str, recorded_digest: bytes) -> None:
        super().__init__(message)
        self.recorded_digest = recorded_digest  # the payment the id was first used for


class TenantMismatch(PermanentError):
    reason = "tenant_mismatch"


class CoreRefusal(PermanentError):
    """The core refused the transfer and recorded the refusal under its key: the same key is refused for good.

    iso_reason is the ISO 20022 status reason (ExternalStatusReason1Code) a pain.002 gives for it.
    """

    iso_reason: ClassVar[str] = "MS03"


class AccountClosed(CoreRefusal):
    reason = "account_closed"
    iso_reason = "AC04"  # ClosedAccountNumber


class UnknownAccount(CoreRefusal):
    reason = "unknown_account"
    iso_reason = "AC01"  # IncorrectAccountNumber


class InsufficientFunds(CoreRefusal):
    reason = "insufficient_funds"
    iso_reason = "AM04"  # InsufficientFunds


class CurrencyNotHeld(CoreRefusal):
    reason = "currency_not_held"
    iso_reason = "AM03"  # NotAllowedCurrency


class TransferKeyConflict(PermanentError):
    """The core holds this payment's key for a different transfer: the payment under that message_id is not
    the one it booked or refused. Never resent; an operator must look."""

    reason = "core_key_conflict"


class MessageExpired(PermanentError):
    reason = "expired"


# ---------------------------------------------------------------- caller errors


class CallerError(RemitError):
    """A caller (CLI user, API client) asked for something that cannot be done; says how to fix it.

    `over_http`: the same error told to an HTTP client, when the message names a CLI command or flag."""

    def __init__(self, message: str, *, over_http: str | None = None) -> None:
        super().__init__(message)
        self.over_http = over_http


class UsageError(CallerError):
    """The request itself is wrong: a bad value, a missing or contradictory option."""


class NotFound(CallerError):
    """Nothing by that name or id within the caller's reach (another tenant's reads like a missing one).
    Text after a `;` is a hint for the CLI; the HTTP API leaves it out."""


class Forbidden(CallerError):
    """The caller may not do this (a tenant's key asking for what only admins may do)."""


class Conflict(CallerError):
    """Not possible in the current state of the thing (a dead letter no longer open)."""


class TenantNotDrained(Conflict):
    """`tenants delete --confirm` while the tenant still has payments to process: asking later may succeed."""


class OverLimit(CallerError):
    """Over a tenant limit: HTTP 429 with Retry-After, or a CLI message saying when to retry."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = max(1, math.ceil(retry_after))


class ServiceUnavailable(CallerError):
    """A service remit needs (PostgreSQL, RabbitMQ, its management API) did not answer: nothing was wrong
    with the request, and it may succeed later."""


class CoreStatusUnavailable(ServiceUnavailable):
    """The external core did not say what it holds under a transfer key (unreachable, an error status, an answer
    outside its contract): what a replay would do there cannot be told yet."""


class UnknownTenant(PermanentError, NotFound):
    """No tenant with that id."""

    reason = "unknown_tenant"


class BatchRefused(UsageError):
    """A whole batch is refused (unknown tenant, file already submitted, nothing valid in it)."""


class FileRefused(BatchRefused):
    """A bank file is refused whole: unreadable, hostile, truncated, or its own totals disagree with its rows.

    iso_code is the ISO 20022 status reason a pain.002 gives for the refusal (FF01 invalid file format, AM16
    wrong group control sum, ...): the reader knows why, the report needs the code.
    """

    def __init__(self, message: str, iso_code: str = "FF01") -> None:
        super().__init__(message)
        self.iso_code = iso_code


class LimitExceeded(OverLimit):
    """A batch over its tenant's in-flight limit or publish rate: refused whole, nothing accepted."""


class BatchNotFound(NotFound):
    """No such batch within the caller's tenant."""


class DeadLetterNotFound(NotFound):
    """No dead letter with that id within the caller's tenant."""


class ReplayRefused(UsageError):
    """A replay that could pay twice, cannot succeed, or was not asked for explicitly enough."""


class ForceRefused(Forbidden):
    """Force asked for by a caller who may not force (a tenant's API key)."""


class DiscardRefused(Conflict):
    """The dead letter is not open, or no reason was given."""


class RetentionTooShort(UsageError):
    """A retention shorter than TTL + longest retry delay + replay window would break idempotency."""


# How a caller error reaches its caller: the first class it is an instance of decides.
EX_TEMPFAIL: Final = 75  # sysexits.h: a temporary failure, the same command may work later
EXIT_CODES: Final[tuple[tuple[type[CallerError], int], ...]] = (
    (ServiceUnavailable, EX_TEMPFAIL),
    (TenantNotDrained, EX_TEMPFAIL),
    (CallerError, 2),  # the caller must change something; click's own usage errors exit 2 as well
)
HTTP_STATUSES: Final[tuple[tuple[type[CallerError], HTTPStatus], ...]] = (
    (NotFound, HTTPStatus.NOT_FOUND),
    (Forbidden, HTTPStatus.FORBIDDEN),
    (Conflict, HTTPStatus.CONFLICT),
    (OverLimit, HTTPStatus.TOO_MANY_REQUESTS),
    (ServiceUnavailable, HTTPStatus.SERVICE_UNAVAILABLE),
    (CallerError, HTTPStatus.UNPROCESSABLE_ENTITY),
)


def exit_code(error: CallerError) -> int:
    return next(code for kind, code in EXIT_CODES if isinstance(error, kind))


def http_status(error: CallerError) -> HTTPStatus:
    return next(code for kind, code in HTTP_STATUSES if isinstance(error, kind))

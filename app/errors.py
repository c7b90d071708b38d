"""One exception tree. Retryable failures go round the delay queues; permanent ones are dead-lettered at once."""

from typing import ClassVar


class RemitError(Exception):
    """Base of every error remit raises on purpose."""

    retryable: ClassVar[bool] = True
    reason: ClassVar[str] = "error"


class RetryableError(RemitError):
    """Worth trying again later: a dependency was unavailable or slow."""

    retryable = True
    reason = "retryable"


class ServiceUnavailable(RetryableError):
    reason = "service_unavailable"


class CoreBankingTimeout(RetryableError):
    reason = "core_banking_timeout"


class PermanentError(RemitError):
    """Trying again cannot help: the message or its target is wrong."""

    retryable = False
    reason = "permanent_failure"


class InvalidMessage(PermanentError):
    reason = "invalid"


class TenantMismatch(PermanentError):
    reason = "tenant_mismatch"


class UnknownTenant(PermanentError):
    reason = "unknown_tenant"


class AccountClosed(PermanentError):
    reason = "permanent_failure"


class MessageExpired(PermanentError):
    reason = "expired"


class UsageError(RemitError):
    """A caller (CLI user, API client) asked for something that cannot be done; says how to fix it."""

    retryable = False
    reason = "usage"


class BatchRefused(UsageError):
    """A whole batch is refused (unknown tenant, file already submitted, nothing valid in it)."""

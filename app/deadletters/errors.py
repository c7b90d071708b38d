"""Errors of the dead-letter tools. Each is a UsageError: the message says what to do instead."""

from app.errors import UsageError


class DeadLetterNotFound(UsageError):
    """No dead letter with that id (within the caller's tenant)."""


class ReplayRefused(UsageError):
    """A replay that could pay twice, cannot succeed, or was not asked for explicitly enough."""


class DiscardRefused(UsageError):
    """The dead letter is not open, or no reason was given."""


class RetentionTooShort(UsageError):
    """A retention shorter than TTL + longest retry delay + replay window would break idempotency."""

"""The core's one exception tree: each error knows its HTTP status and its stable code (the error shape)."""

from collections.abc import Mapping
from typing import ClassVar


class CoreBankError(Exception):
    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"
    headers: ClassVar[Mapping[str, str]] = {}


class Unauthenticated(CoreBankError):
    """No credential, or not one this core knows (for the route: a client's token, or the faults token)."""

    status = 401
    code = "unauthenticated"
    headers: ClassVar[Mapping[str, str]] = {"WWW-Authenticate": 'Bearer realm="corebank"'}


class KeyInProgress(CoreBankError):
    status = 409
    code = "idempotency_key_in_progress"


class KeyReused(CoreBankError):
    status = 422
    code = "idempotency_key_reused"


class BatchTooLarge(CoreBankError):
    status = 422
    code = "batch_too_large"


class BadCursor(CoreBankError):
    status = 422
    code = "bad_cursor"


class AccountExists(CoreBankError):
    status = 409
    code = "account_exists"


class AccountNotFound(CoreBankError):
    status = 404
    code = "account_not_found"


class FaultsDisabled(CoreBankError):
    status = 403
    code = "faults_disabled"


class Unavailable(CoreBankError):
    status = 503
    code = "unavailable"


class InjectedError(CoreBankError):
    status = 500
    code = "injected_error"


class DatabaseNotReady(CoreBankError):
    """The database is missing, unreachable, or not at this code's schema head (start-up refuses to serve)."""


class BadAccountsFile(CoreBankError):
    """A line of an accounts file is not an account (the loader stops before opening anything)."""


class BadCredentials(CoreBankError):
    """The client tokens (or the faults token) the core was given are missing or unusable (start-up refuses)."""

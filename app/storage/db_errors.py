"""What a failed statement may say about itself: its kind, SQLSTATE and constraint, never its values.

str() of a DBAPI error carries the statement's parameters (account numbers) and PostgreSQL's message, whose
DETAIL can quote the failing row; neither may reach a log line, an AMQP header or a table.
"""

from asyncpg import PostgresError
from sqlalchemy.exc import DBAPIError

# SQLSTATE classes of a row PostgreSQL refused: 22 data exception, 23 integrity constraint violation.
_ROW_REFUSED_CLASSES = frozenset({"22", "23"})


def _driver_error(exc: BaseException) -> BaseException | None:
    """asyncpg's own exception: behind SQLAlchemy's DBAPI one, or `exc` itself when a statement ran on the
    driver's connection (app/storage/driver.py)."""
    own = isinstance(exc, PostgresError)
    driver: object = exc if own else getattr(getattr(exc, "orig", None), "__cause__", None)
    return driver if isinstance(driver, BaseException) else None


def sqlstate(exc: BaseException) -> str | None:
    value = getattr(getattr(exc, "orig", None), "sqlstate", None)
    if value is None and isinstance(exc, PostgresError):
        value = exc.sqlstate
    return value if isinstance(value, str) else None


def row_refused(exc: BaseException) -> bool:
    """PostgreSQL refused a value or a constraint refused a row: the data is wrong, not the connection."""
    state = sqlstate(exc)
    return state is not None and state[:2] in _ROW_REFUSED_CLASSES


def describe(exc: BaseException) -> str:
    """E.g. 'IntegrityError (UniqueViolationError, SQLSTATE 23505, constraint uq_ledger_tenant_id_message_id)',
    or 'UniqueViolationError (SQLSTATE 23505, constraint ...)' for the driver's own."""
    driver = _driver_error(exc)
    facts = [type(driver).__name__] if driver is not None and driver is not exc else []
    if (state := sqlstate(exc)) is not None:
        facts.append(f"SQLSTATE {state}")
    if isinstance(constraint := getattr(driver, "constraint_name", None), str):
        facts.append(f"constraint {constraint}")
    return f"{type(exc).__name__} ({', '.join(facts)})" if facts else type(exc).__name__


def violated_constraint(exc: DBAPIError) -> str | None:
    """The name of the constraint an IntegrityError broke, as asyncpg reports it (None if unknown)."""
    cause = getattr(exc.orig, "__cause__", None)
    name = getattr(cause, "constraint_name", None)
    return name if isinstance(name, str) else None

"""What a failed statement may say about itself: its kind, SQLSTATE and constraint, never its values.

str() of a DBAPI error carries the statement's parameters (account numbers) and PostgreSQL's message, whose
DETAIL can quote the failing row; neither may reach a log line, an AMQP header or a table.
"""

from sqlalchemy.exc import DBAPIError

# SQLSTATE classes of a row PostgreSQL refused: 22 data exception, 23 integrity constraint violation.
_ROW_REFUSED_CLASSES = frozenset({"22", "23"})


def sqlstate(exc: BaseException) -> str | None:
    value = getattr(getattr(exc, "orig", None), "sqlstate", None)
    return value if isinstance(value, str) else None


def row_refused(exc: BaseException) -> bool:
    """PostgreSQL refused a value or a constraint refused a row: the data is wrong, not the connection."""
    state = sqlstate(exc)
    return state is not None and state[:2] in _ROW_REFUSED_CLASSES


def describe(exc: BaseException) -> str:
    """E.g. 'IntegrityError (UniqueViolationError, SQLSTATE 23505, constraint uq_ledger_tenant_id_message_id)'."""
    orig = getattr(exc, "orig", None)
    driver = orig.__cause__ if orig is not None else None  # the driver's own exception, behind the DBAPI one
    facts = [type(driver).__name__] if driver is not None else []
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

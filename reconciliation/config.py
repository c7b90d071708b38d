"""Run parameters and the parsing of what users type for them (as-of times, database URLs)."""

import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

DATABASE_URL_ENV: Final = "REMIT_DATABASE_URL"
DEFAULT_GRACE_MINUTES: Final = 15
# The nightly job reads every tenant's rows: it runs in row-level security's system scope.
SYSTEM_SCOPE: Final = {"remit.scope": "system"}


@dataclass(frozen=True)
class RunConfig:
    as_of: datetime  # aware, UTC
    out_dir: str
    snapshot_dir: str
    grace: timedelta = timedelta(minutes=DEFAULT_GRACE_MINUTES)
    database_url: str | None = None  # SQLAlchemy or libpq form; None: nothing is recorded in PostgreSQL


def parse_as_of(text: str) -> datetime:
    """ISO 8601 with an offset (or Z), or 'now'. A naive time is refused: nightly jobs cross DST."""
    if text.strip().lower() == "now":
        return datetime.now(UTC)
    parsed = datetime.fromisoformat(text.strip())
    if parsed.tzinfo is None:
        raise ValueError(f"as-of time {text!r} has no UTC offset; write e.g. 2025-05-01T00:00:00Z")
    return parsed.astimezone(UTC)


def resolve_database_url(explicit: str | None) -> str | None:
    """An explicit URL wins, then REMIT_DATABASE_URL; None when neither is set."""
    return explicit or os.environ.get(DATABASE_URL_ENV) or None


def libpq_dsn(url: str) -> str:
    """asyncpg and libpq want postgresql://; SQLAlchemy URLs carry a +driver suffix."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"not a database URL: {url!r}")
    base = scheme.split("+", 1)[0]
    if base not in ("postgresql", "postgres"):
        raise ValueError(f"reconciliation reads PostgreSQL only, got scheme {scheme!r}")
    return f"postgresql://{rest}"

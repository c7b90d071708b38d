"""Run parameters and the parsing of what users type for them (as-of times, database URLs). The job reads no
environment of its own: its callers build a RunConfig (`remit reconcile` from remit's Settings, the
spark-submit entry point from its arguments)."""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final

DEFAULT_GRACE_MINUTES: Final = 15
# The nightly job reads every tenant's rows: it runs in row-level security's system scope.
SYSTEM_SCOPE: Final = {"remit.scope": "system"}


@dataclass(frozen=True)
class CoreTls:
    ca_file: str | None = None  # verifies the core's certificate; None: the default trust store
    client_cert_file: str | None = None  # remit's certificate, where the core requires mutual TLS
    client_key_file: str | None = None


@dataclass(frozen=True)
class RunConfig:
    as_of: datetime  # aware, UTC
    out_dir: str
    snapshot_dir: str
    grace: timedelta = timedelta(minutes=DEFAULT_GRACE_MINUTES)
    database_url: str | None = None  # SQLAlchemy or libpq form; None: nothing is recorded in PostgreSQL
    core_url: str | None = None  # the external core's base URL: its journal is exported too (three-way)
    core_token: str | None = field(default=None, repr=False)  # the bearer token the core gave remit; never shown
    core_tls: CoreTls | None = None  # the core's CA and remit's client certificate, for https (mutual TLS)


AS_OF_FORMS = "use an ISO 8601 time with a UTC offset (2025-05-02T00:00:00Z, 2025-05-02T00:00:00+10:00) or now"


def parse_as_of(text: str) -> datetime:
    """ISO 8601 with an offset (or Z), or 'now'. A naive time is refused: nightly jobs cross DST."""
    if text.strip().lower() == "now":
        return datetime.now(UTC)
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a time remit reads: {AS_OF_FORMS}") from None
    if parsed.tzinfo is None:
        raise ValueError(f"{text!r} has no UTC offset (nightly runs cross daylight saving): {AS_OF_FORMS}")
    return parsed.astimezone(UTC)


def libpq_dsn(url: str) -> str:
    """asyncpg and libpq want postgresql://; SQLAlchemy URLs carry a +driver suffix."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"not a database URL: {url!r}")
    base = scheme.split("+", 1)[0]
    if base not in ("postgresql", "postgres"):
        raise ValueError(f"reconciliation reads PostgreSQL only, got scheme {scheme!r}")
    return f"postgresql://{rest}"

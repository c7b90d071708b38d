"""An in-memory database for the fake repositories: committed tables, and transactions that see their own
writes over them, commit them all at once or discard them, and see only their scope's rows (as PostgreSQL's
row-level security lets a tenant's transaction see only that tenant's rows)."""

import itertools
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.exc import DataError, DBAPIError, IntegrityError, ProgrammingError

_DELETED = object()


class FakeDbapiError(Exception):
    """What the driver's error carries that app/storage/db_errors.py reads: its SQLSTATE."""

    def __init__(self, sqlstate: str) -> None:
        super().__init__(f"SQLSTATE {sqlstate}")
        self.sqlstate = sqlstate


def db_error(sqlstate: str, what: str) -> DBAPIError:
    """The error SQLAlchemy raises when PostgreSQL answers `sqlstate` (e.g. 23505 for a unique violation)."""
    kinds = {"22": DataError, "23": IntegrityError}
    return kinds.get(sqlstate[:2], ProgrammingError)(what, None, FakeDbapiError(sqlstate))


@dataclass
class FakeDatabase:
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    tables: dict[str, dict[Hashable, Any]] = field(default_factory=lambda: defaultdict(dict))
    fail_commits: int = 0  # the next n commits fail as a whole (the connection is lost at COMMIT)
    commits: int = 0
    _ids: dict[str, Iterator[int]] = field(default_factory=lambda: defaultdict(lambda: itertools.count(1)))

    def next_id(self, table: str) -> int:
        return next(self._ids[table])

    def rows(self, table: str) -> list[Any]:
        """What is committed, for assertions."""
        return list(self.tables[table].values())


class FakeTransaction:
    def __init__(self, db: FakeDatabase, scope: str | None) -> None:
        self.db = db
        self.scope = scope  # a tenant, or None: the system scope
        self._writes: dict[str, dict[Hashable, Any]] = defaultdict(dict)
        self._inserted: dict[str, set[Hashable]] = defaultdict(set)

    def visible(self, row: Any) -> bool:
        return self.scope is None or getattr(row, "tenant_id", None) == self.scope

    def require_system(self, table: str) -> None:
        """Tables a tenant's role is not granted at all (worker pools, heartbeats)."""
        if self.scope is not None:
            raise db_error("42501", f"permission denied for table {table}")

    def get(self, table: str, key: Hashable) -> Any:
        row = self._writes[table].get(key, self.db.tables[table].get(key))
        return None if row is None or row is _DELETED or not self.visible(row) else row

    def rows(self, table: str) -> list[Any]:
        merged = {**self.db.tables[table], **self._writes[table]}
        return [row for row in merged.values() if row is not _DELETED and self.visible(row)]

    def items(self, table: str) -> list[tuple[Hashable, Any]]:
        merged = {**self.db.tables[table], **self._writes[table]}
        return [(key, row) for key, row in merged.items() if row is not _DELETED and self.visible(row)]

    def insert(self, table: str, key: Hashable, row: Any) -> None:
        """A new row; a key taken already (visible or not, like a unique index) is refused with 23505."""
        if self._taken(table, key):
            raise db_error("23505", f"duplicate key in {table}")
        self.put(table, key, row)
        self._inserted[table].add(key)

    def put(self, table: str, key: Hashable, row: Any) -> None:
        if not self.visible(row):
            raise db_error("42501", f"new row violates row-level security policy for table {table}")
        self._writes[table][key] = row

    def delete(self, table: str, key: Hashable) -> None:
        if self.get(table, key) is not None:
            self._writes[table][key] = _DELETED

    def commit(self) -> None:
        if self.db.fail_commits:
            self.db.fail_commits -= 1
            raise ConnectionResetError("the connection was lost at COMMIT")
        for table, keys in self._inserted.items():  # another transaction committed the same key first
            if any(key in self.db.tables[table] for key in keys):
                raise db_error("23505", f"duplicate key in {table}")
        for table, writes in self._writes.items():
            for key, row in writes.items():
                if row is _DELETED:
                    self.db.tables[table].pop(key, None)
                else:
                    self.db.tables[table][key] = row
        self._writes.clear()
        self._inserted.clear()
        self.db.commits += 1

    def _taken(self, table: str, key: Hashable) -> bool:
        if key in self._writes[table]:
            return self._writes[table][key] is not _DELETED
        return key in self.db.tables[table]

"""The consumer, the dead-letter store, tenancy, the store gauges, the in-flight counts and the reports (batch
pages, status reports, reconciliation runs) reach PostgreSQL only through the unit of work's repositories:
none of them imports SQLAlchemy, the tables or a repository implementation, or executes a statement itself
(the SQL lives in app/storage/repositories/)."""

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "app"
BEHIND_PORTS = sorted(
    [
        *(APP / "consumer").glob("*.py"),
        *(APP / "deadletters").glob("*.py"),
        *(APP / "tenancy").glob("*.py"),
        *(APP / "reporting").glob("*.py"),
        APP / "observability" / "store_gauges.py",
        APP / "observability" / "in_flight.py",
    ]
)
FORBIDDEN = ("sqlalchemy", "app.storage.tables", "app.storage.repositories")


def offences(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Attribute) and node.attr in ("execute", "exec_driver_sql"):
            found.append(f"line {node.lineno}: .{node.attr}(...)")
            continue
        else:
            continue
        found += [f"line {node.lineno}: imports {n}" for n in names if n.startswith(FORBIDDEN)]
    return found


@pytest.mark.parametrize("path", BEHIND_PORTS, ids=lambda p: str(p.relative_to(APP)))
def test_the_module_uses_only_the_repositories(path: Path) -> None:
    assert offences(path) == []


def test_the_check_finds_sql_where_there_is_some() -> None:
    assert offences(APP / "storage" / "repositories" / "ledger.py") != []

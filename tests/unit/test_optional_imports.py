"""`pip install remit` has no extra: no module of the service may import one when it is loaded.

Follows every module-level import from app/, contracts/ and corebank/ through our own packages; an import
inside a function (as `remit reconcile` does for the spark extra) runs only when called, so it is allowed.
tests/e2e/test_install.py proves the same on a real installation; this finds the chain in a second.
"""

import ast
import re
import tomllib
from collections.abc import Iterator
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = ("app", "contracts", "corebank", "reconciliation")
SERVICE = ("app", "contracts", "corebank")


def _normalized(requirement: str) -> str:
    return re.split(r"[\[=<>!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _optional_modules() -> set[str]:
    """Top-level import names of the packages that only an extra installs."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {_normalized(r) for r in project["dependencies"]}
    extras = {_normalized(r) for rs in project["optional-dependencies"].values() for r in rs} - base
    provided = {
        module
        for module, dists in packages_distributions().items()
        if any(_normalized(d) in extras for d in dists) and not module.startswith("_")
    }
    return provided | {name.replace("-", "_") for name in extras}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _loaded_at_import(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports that run when the module loads: not in functions, not under `if TYPE_CHECKING:`."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from _loaded_at_import(node.orelse)
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for field in ("body", "orelse", "finalbody", "handlers"):
                yield from _loaded_at_import(getattr(node, field, []))


def _import_graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for top in FIRST_PARTY for p in (ROOT / top).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in _loaded_at_import(ast.parse(path.read_text()).body):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif node.module:
                targets.add(node.module)
                targets |= {f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules}
        # Importing a.b.c loads the packages a and a.b first.
        graph[name] = {".".join(t.split(".")[:i]) for t in targets for i in range(1, t.count(".") + 2)}
    return graph


def test_no_service_module_loads_an_extra_when_imported() -> None:
    optional, graph = _optional_modules(), _import_graph()
    assert {"pyspark", "pyarrow", "pandas", "duckdb", "pytest", "psutil", "yaml", "playwright"} <= optional
    chains: list[str] = []
    for start in sorted(m for m in graph if m.split(".")[0] in SERVICE and not m.endswith("__main__")):
        seen, frontier = {start}, [[start]]
        while frontier:
            chain = frontier.pop()
            for target in sorted(graph.get(chain[-1], ())):
                if target in optional:
                    chains.append(" -> ".join([*chain, target]))
                elif target in graph and target not in seen:
                    seen.add(target)
                    frontier.append([*chain, target])
    assert chains == [], "\n".join(chains)

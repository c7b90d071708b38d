"""No skip can hide a missing dependency under CI=true: a test that cannot run there fails, loudly.

Locally a missing service, tool or extra skips (a developer may run what they have); in CI the same skip
would pass a run that never tested anything. So every skip site in tests/ decides on CI=true first, and
`pytest.importorskip` (which cannot) is not used at all.
"""

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SKIPS = {"skip", "importorskip", "skipif"}


def _skip_sites(tree: ast.AST, scope: ast.AST | None = None) -> Iterator[tuple[ast.Attribute, ast.AST | None]]:
    """(skip call or marker, the innermost function whose body holds it) for every skip in the tree. A
    marker (`pytest.mark.skip...`) has no function around it: it decides before any test code runs."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Attribute) and node.attr in SKIPS:
            yield node, None if ast.unparse(node).startswith("pytest.mark.") else scope
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                yield from _skip_sites(ast.Expression(decorator), scope)
            for statement in node.body:
                yield from _skip_sites(ast.Module([statement], []), node)
        else:
            yield from _skip_sites(node, scope)


def _unguarded() -> list[str]:
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node, scope in _skip_sites(ast.parse(path.read_text())):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
            if node.attr == "importorskip" or scope is None:
                found.append(f"{where}: {ast.unparse(node)} cannot fail under CI=true")
            elif "os.environ.get('CI')" not in ast.unparse(scope):
                found.append(f"{where}: {ast.unparse(node)} in {getattr(scope, 'name', '?')}() skips under CI=true too")
    return found


def test_every_skip_fails_instead_under_ci() -> None:
    assert _unguarded() == []


def test_the_scan_finds_an_unguarded_skip() -> None:
    """The rule's own check: the shapes the scan must refuse are refused, the guarded one passes."""
    source = (
        "import os, pytest\n"
        'pytest.importorskip("pyspark")\n'
        "def bare():\n    pytest.skip('no docker')\n"
        "@pytest.mark.skipif(True, reason='x')\ndef marked():\n    pass\n"
        "def guarded():\n"
        '    if os.environ.get("CI") == "true":\n        pytest.fail("missing")\n    pytest.skip("missing")\n'
    )
    parsed = _skip_sites(ast.parse(source))
    sites = [(ast.unparse(node), getattr(scope, "name", None)) for node, scope in parsed]
    assert sites == [
        ("pytest.importorskip", None),
        ("pytest.skip", "bare"),
        ("pytest.mark.skipif", None),
        ("pytest.skip", "guarded"),
    ]


def _collect_spark_suite(tmp_path: Path, ci: str) -> subprocess.CompletedProcess[str]:
    """Collect tests/spark with a pyspark that does not import (a broken or missing install), as the whole
    suite does: from tests/ (given as an argument, a conftest that skips is an error, CI or not)."""
    broken = tmp_path / "pyspark"
    broken.mkdir()
    (broken / "__init__.py").write_text("raise ImportError('simulated: pyspark is not installed')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "CI": ci}
    others = [f"--ignore={p}" for p in (ROOT / "tests").iterdir() if p.is_dir() and p.name != "spark"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", *others, "tests"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_spark_suite_fails_under_ci_when_pyspark_does_not_import(tmp_path: Path) -> None:
    result = _collect_spark_suite(tmp_path, ci="true")
    assert result.returncode != 0, result.stdout
    assert "CI: pyspark does not import (simulated: pyspark is not installed)" in result.stdout + result.stderr


def test_the_spark_suite_skips_locally_when_pyspark_does_not_import(tmp_path: Path) -> None:
    result = _collect_spark_suite(tmp_path, ci="")
    assert result.returncode in (0, 5), result.stdout + result.stderr  # 5: nothing collected
    assert "error" not in result.stdout.lower(), result.stdout

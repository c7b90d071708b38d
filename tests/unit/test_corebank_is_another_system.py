"""The reference core stands for another vendor's system: nothing under corebank/ imports remit's code."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REMIT = {"app", "contracts", "reconciliation", "tests"}


def _imported(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {name.split(".")[0] for name in names}


def test_corebank_imports_nothing_from_remit() -> None:
    files = sorted((ROOT / "corebank").rglob("*.py"))
    assert len(files) > 10
    offenders = {str(f.relative_to(ROOT)): sorted(_imported(f) & REMIT) for f in files if _imported(f) & REMIT}
    assert not offenders, offenders


def test_the_rule_sees_an_import_of_remit(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import json\nfrom app.settings import Settings\nimport contracts.message as m\n")
    assert _imported(sample) & REMIT == {"app", "contracts"}

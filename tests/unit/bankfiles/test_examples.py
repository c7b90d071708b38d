"""The example bank files are what examples/generate_bankfiles.py writes, and remit reads them as
bankfiles_expected.json says: the rows, the accepted ones, and why each bad row is rejected."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.bankfiles import BankFile
from app.publisher.validation import validate_rows
from tests.utils.factories import batch_context

EXAMPLES = Path(__file__).parents[3] / "examples"
EXPECTED: dict[str, dict[str, Any]] = json.loads((EXAMPLES / "bankfiles_expected.json").read_text())
FILES = sorted(EXPECTED)


def test_the_committed_examples_are_the_generators_output(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(EXAMPLES / "generate_bankfiles.py"), str(tmp_path)], check=True)
    written = [*FILES, "bankfiles_expected.json", "EXPECTED.json"]  # EXPECTED.json: the demo's tenants too
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(written)
    for name in written:
        assert (tmp_path / name).read_bytes() == (EXAMPLES / name).read_bytes(), name


@pytest.mark.parametrize("name", FILES)
def test_each_example_reads_and_validates_as_expected(name: str) -> None:
    expected = EXPECTED[name]
    with BankFile(EXAMPLES / name) as bank:
        rows = list(bank.rows())
        summary = bank.summary
    assert summary.format == expected["format"]
    assert summary.identity == (summary.sha256 if expected["identity"] == "sha256" else expected["identity"])
    assert len(rows) == expected["rows"]
    ctx = batch_context()
    batch = validate_rows(rows, ctx)
    assert len(batch.accepted) == expected["accepted"]
    reasons = {str(r.row_number): "; ".join(r.errors) for r in batch.rejected}
    assert sorted(reasons) == sorted(expected["rejected"])
    for row, why in expected["rejected"].items():
        assert why in reasons[row], (row, reasons[row])

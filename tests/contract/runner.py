"""Schemathesis as the contract tests run it: a real process's OpenAPI document, every check, the four phases,
a bounded and seeded number of examples (REMIT_CONTRACT_EXAMPLES, REMIT_CONTRACT_SEED for a deeper or another
run), one worker, the hooks of tests/contract/hooks.py; and what a clean run looks like."""

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.utils.services import ROOT

EXAMPLES = os.environ.get("REMIT_CONTRACT_EXAMPLES", "8")
SEED = os.environ.get("REMIT_CONTRACT_SEED", "17")
RUN_SECONDS = 600  # about 90 s each on two idle cores; room for a loaded machine
SCHEMATHESIS = Path(sys.executable).with_name("st")


def run_schemathesis(
    schema_url: str,
    config_text: str,
    tmp_path: Path,
    name: str,
    env: dict[str, str],
    header: str | None = None,
    exclude_checks: list[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`st run` on the document at `schema_url` with this configuration (TOML), `header` sent with every request
    (a credential; None: none at all), and the hooks seeing `env`."""
    config_file = tmp_path / f"{name}.toml"
    config_file.write_text(config_text)
    args = [str(SCHEMATHESIS), "--config-file", str(config_file), "run", schema_url, "--checks", "all"]
    if exclude_checks:
        args += ["--exclude-checks", ",".join(exclude_checks)]
    args += [
        "--phases",
        "examples,coverage,fuzzing,stateful",
        "--max-examples",
        EXAMPLES,
        "--seed",
        SEED,
        "--generation-database",
        "none",  # no examples kept between runs: every run is the same run
        "--workers",
        "1",
        "--report",
        "junit",
        "--report-dir",
        str(tmp_path / name),
        "--no-color",
    ]
    if header is not None:
        args += ["--header", header]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.contract.hooks", "PYTHONPATH": str(ROOT), **env}
    return subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=RUN_SECONDS)


def assert_clean(run: subprocess.CompletedProcess[str]) -> None:
    output = run.stdout + run.stderr
    print(output[-3_000:])  # the summary, shown with -s
    assert run.returncode == 0, output[-20_000:]
    for phase in ("Coverage", "Fuzzing", "Stateful"):  # each ran and found nothing
        assert re.search(rf"✅ {phase}\b", output), (phase, output[-3_000:])

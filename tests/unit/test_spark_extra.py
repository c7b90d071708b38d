"""`remit reconcile` without the spark extra or without Java: one line saying what to install, exit 1.

The missing package is made missing for real in a child process (`sys.modules[name] = None` makes Python
refuse the import); tests/e2e/test_install.py shows the same on an installation without the extra.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_RUN = "import sys\n{block}from app.cli.remit import run\nsys.argv = ['remit', *sys.argv[1:]]\nrun()\n"


def _reconcile(tmp_path: Path, *, without: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    block = f"sys.modules[{without!r}] = None\n" if without else ""
    base = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    return subprocess.run(
        [sys.executable, "-c", _RUN.format(block=block), "reconcile", "--as-of", "not-a-time", "--out", str(tmp_path)],
        cwd=ROOT,
        env={**base, "COLUMNS": "60", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("module", ["pyspark", "pyarrow"])
def test_without_the_extra_one_line_names_it(tmp_path: Path, module: str) -> None:
    result = _reconcile(tmp_path, without=module)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"remit reconcile needs the spark extra ({module} is not installed): pip install 'remit[spark]'; "
        "and Java 17 (Debian: apt-get install openjdk-17-jre-headless)"
    ]
    assert result.stdout == ""


def test_without_java_one_line_names_it(tmp_path: Path) -> None:
    result = _reconcile(tmp_path, PATH=str(tmp_path))  # no java on this PATH, and JAVA_HOME unset
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "remit reconcile needs Java 17 (Debian: apt-get install openjdk-17-jre-headless): "
        "no java on PATH and JAVA_HOME is not set"
    ]


def test_a_java_home_without_java_is_no_java(tmp_path: Path) -> None:
    result = _reconcile(tmp_path, JAVA_HOME=str(tmp_path))
    assert result.returncode == 1
    assert "needs Java 17" in result.stderr


def test_with_the_extra_and_java_the_job_starts(tmp_path: Path) -> None:
    java = tmp_path / "bin" / "java"  # what the check looks for; the job stops before starting it
    java.parent.mkdir()
    java.touch(mode=0o755)
    result = _reconcile(tmp_path, JAVA_HOME=str(tmp_path))
    # Past the check: the job's own validation answers (the as-of time is not a time).
    assert result.returncode == 2
    assert "needs" not in result.stderr
    assert "not-a-time" in result.stderr

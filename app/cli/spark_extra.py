"""What `remit reconcile` needs beyond `pip install remit`: the `spark` extra and a Java runtime.

Only the reconciliation job imports them, so the rest of remit installs and runs without them; when one is
missing, `remit reconcile` says so in one line instead of a traceback.
"""

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import typer

from reconciliation.statuses import EXIT_FAILED

# Top-level modules of the `spark` extra's packages (pyproject.toml) that reconciliation/ imports.
SPARK_MODULES = frozenset({"pyspark", "pyarrow", "pandas", "py4j"})
JAVA_HINT = "Java 17 (Debian: apt-get install openjdk-17-jre-headless)"


def _java_found(java_home: str | None) -> bool:
    # PySpark starts $JAVA_HOME/bin/java when JAVA_HOME is set, else `java` from PATH.
    return Path(java_home, "bin", "java").is_file() if java_home else shutil.which("java") is not None


def _refuse(line: str) -> NoReturn:
    # typer.echo, not rich: one line however narrow the terminal.
    typer.echo(f"remit reconcile needs {line}", err=True)
    raise typer.Exit(EXIT_FAILED)


@contextmanager
def spark_extra_required(java_home: str | None) -> Iterator[None]:
    """Wrap the imports of the reconciliation job: a missing extra or Java (JAVA_HOME: Settings.java_home) ends
    the command in one line."""
    try:
        yield
    except ModuleNotFoundError as exc:
        module = (exc.name or "").split(".")[0]
        if module not in SPARK_MODULES:
            raise
        _refuse(f"the spark extra ({module} is not installed): pip install 'remit[spark]'; and {JAVA_HINT}")
    if not _java_found(java_home):
        _refuse(f"{JAVA_HINT}: no java on PATH and JAVA_HOME is not set")

"""`pip install remit` without extras, as a user gets it: the wheel in a fresh virtualenv.

The wheel is built from exactly what the Dockerfile's build stage copies, and installed with no extra
(dependencies from the package index or pip's cache). Every command answers --help, faststream loads both
services, every module of app/, contracts/ and corebank/ imports, `remit db upgrade --create` migrates a
fresh database, and only `remit reconcile` needs the spark extra, which it says in one line.
"""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory

from tests.utils.dockerfile import ROOT, copied_sources
from tests.utils.services import PG_ADMIN_DSN, drop_database, service_missing, unique

pytestmark = pytest.mark.e2e

# Walks the installed CLI's command tree and asks every command for --help, in one process.
_EVERY_HELP = """
import json, click, typer.main
from click.testing import CliRunner
from app.cli.remit import cli

def paths(command, prefix):
    yield prefix
    for name, sub in getattr(command, "commands", {}).items():
        yield from paths(sub, [*prefix, name])

root = typer.main.get_command(cli)
runner = CliRunner()
answers = {}
for path in paths(root, []):
    result = runner.invoke(root, [*path, "--help"], prog_name="remit")
    answers[" ".join(path)] = [result.exit_code, "Usage:" in result.output]
print(json.dumps(answers))
"""

# Imports every module the wheel installed, but the job (its modules need the spark extra), the `python -m`
# entry points (they run) and alembic's environments (they run inside alembic only).
_EVERY_IMPORT = """
import importlib, json, pkgutil
import app, contracts, corebank
failed = {}
for package in (app, contracts, corebank):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if module.name.rsplit(".", 1)[1] in ("__main__", "env"):
            continue
        try:
            importlib.import_module(module.name)
        except Exception as exc:
            failed[module.name] = repr(exc)
print(json.dumps(failed))
"""


@dataclass(frozen=True)
class Installed:
    wheel: Path
    bin: Path
    workdir: Path  # not the checkout: nothing may be imported from it by accident

    def run(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        clean = {k: v for k, v in os.environ.items() if not k.startswith("REMIT_") and k != "PYTHONPATH"}
        return subprocess.run(
            [str(self.bin / args[0]), *args[1:]],
            cwd=self.workdir,
            env={**clean, "COLUMNS": "200", **(env or {})},
            capture_output=True,
            text=True,
            timeout=120,
        )

    def python(self, code: str) -> subprocess.CompletedProcess[str]:
        return self.run("python", "-c", code)


def _copy_build_context(target: Path) -> None:
    for source in copied_sources("build"):
        path = ROOT / source
        if path.is_dir():
            shutil.copytree(path, target / source, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, target / source)


def _checked(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("install")
    source, dist, venv, workdir = root / "source", root / "dist", root / "venv", root / "work"
    for path in (source, workdir):
        path.mkdir()
    _copy_build_context(source)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    _checked(subprocess.run([*pip, "wheel", "--no-deps", "-w", str(dist), str(source)], capture_output=True, text=True))
    (wheel,) = dist.glob("remit-*.whl")
    # Faster under load, same result: this pip installs into the new venv (--python), and modules are
    # compiled when first imported instead of all at install time.
    _checked(subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True))
    install = [*pip, "--python", str(venv / "bin" / "python"), "install", "--no-compile", str(wheel)]
    _checked(subprocess.run(install, capture_output=True, text=True))
    return Installed(wheel=wheel, bin=venv / "bin", workdir=workdir)


def test_no_extra_is_installed(installed: Installed) -> None:
    """The premise of every other test here: neither the spark nor the dev extra came along."""
    probe = "import importlib.util as u, json; print(json.dumps({m: u.find_spec(m) is not None for m in %r}))"
    modules = ["pyspark", "pyarrow", "pandas", "duckdb", "pytest", "psutil", "yaml", "playwright"]
    found = json.loads(_checked(installed.python(probe % modules)).stdout)
    assert found == dict.fromkeys(modules, False)


def test_the_wheel_carries_the_migrations_and_the_console_templates(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    revisions = {p.name for p in (ROOT / "alembic" / "versions").glob("*.py")}
    assert revisions
    assert {f"app/storage/schema/versions/{name}" for name in revisions} <= names
    assert "app/storage/schema/env.py" in names
    templates = sorted(p.name for p in (ROOT / "app" / "admin" / "console" / "templates").glob("*.html"))
    assert templates
    load = f"from app.admin.console.render import templates\nfor name in {templates!r}: templates.get_template(name)"
    _checked(installed.python(load))


def test_every_command_answers_help(installed: Installed) -> None:
    assert "Usage:" in _checked(installed.run("remit", "--help")).stdout
    answers = json.loads(_checked(installed.python(_EVERY_HELP)).stdout)
    expected = {"", "db", "db upgrade", "tenants", "tenants add", "dlq", "dlq replay", "workers", "queues"}
    expected |= {"apikeys", "admin", "archiver", "submit", "relay", "status", "demo", "consume", "purge"}
    expected |= {"reconcile", "core-bank"}
    assert expected <= set(answers)
    assert {path: answer for path, answer in answers.items() if answer != [0, True]} == {}
    assert "Usage:" in _checked(installed.run("python", "-m", "corebank", "--help")).stdout
    assert "Usage:" in _checked(installed.run("python", "-m", "app.cli", "--help")).stdout


def test_faststream_loads_the_consumer_and_the_archiver(installed: Installed) -> None:
    # `faststream docs gen` imports the app exactly as `faststream run` does, without starting it.
    for service in ("app.main:app", "app.deadletters.archiver_app:app"):
        out = installed.workdir / f"{service}.json"
        _checked(installed.run("faststream", "docs", "gen", service, "--out", str(out)))
        assert json.loads(out.read_text())["asyncapi"].startswith("3."), service


def test_every_module_of_the_service_imports(installed: Installed) -> None:
    assert json.loads(_checked(installed.python(_EVERY_IMPORT)).stdout) == {}


async def test_db_upgrade_create_migrates_a_fresh_database(installed: Installed) -> None:
    try:
        await (await asyncpg.connect(PG_ADMIN_DSN, timeout=5)).close()
    except (OSError, asyncpg.PostgresError):
        service_missing("PostgreSQL")
    name = unique("remit_install_")
    owner = f"postgresql+asyncpg://root@127.0.0.1:5432/{name}"
    env = {
        "REMIT_MIGRATION_DATABASE_URL": owner,
        "REMIT_DATABASE_URL": f"postgresql+asyncpg://remit_app@127.0.0.1:5432/{name}",
    }
    try:
        result = await asyncio.to_thread(installed.run, "remit", "db", "upgrade", "--create", env=env)
        _checked(result)
        assert f"created database {name}" in result.stdout
        connection = await asyncpg.connect(owner.replace("+asyncpg", ""))
        try:
            version = await connection.fetchval("SELECT version_num FROM alembic_version")
            tables = {r["tablename"] for r in await connection.fetch("SELECT tablename FROM pg_tables")}
        finally:
            await connection.close()
    finally:
        await drop_database(owner)
    config = Config()
    config.set_main_option("script_location", str(ROOT / "alembic"))
    assert version == ScriptDirectory.from_config(config).get_current_head()
    assert {"processed_messages", "ledger", "outbox", "dead_letters", "tenants"} <= tables


def test_reconcile_says_in_one_line_that_it_needs_the_spark_extra(installed: Installed) -> None:
    result = installed.run("remit", "reconcile", "--as-of", "now", "--out", str(installed.workdir / "recon"))
    assert result.returncode == 1
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "pip install 'remit[spark]'" in result.stderr
    assert "Java" in result.stderr

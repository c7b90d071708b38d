"""The Dockerfile, checked where it can be without a Docker engine: targets, user, health, what goes in.

The image cannot be built on these machines; tests/e2e/test_install.py builds the wheel from exactly the
files the build stage copies and runs it without extras.
"""

import ast
import shlex
import tomllib

from tests.utils.dockerfile import ROOT, copied_sources, lineage, stages


def _setup_call() -> ast.Call:
    tree = ast.parse((ROOT / "setup.py").read_text())
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "setup"]
    assert len(calls) == 1
    return calls[0]


def _wheel_sources() -> set[str]:
    """What building the wheel reads: the project files and every directory setup.py takes packages from."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    sources = {"pyproject.toml", "setup.py", pyproject["project"]["readme"]}
    for node in ast.walk(_setup_call()):
        if isinstance(node, ast.keyword) and node.arg == "include":
            sources |= {pattern.rstrip("*").split(".")[0] for pattern in ast.literal_eval(node.value)}
        if isinstance(node, ast.keyword) and node.arg == "package_dir":
            sources |= set(ast.literal_eval(node.value).values())
    return sources


def _user(stage: str) -> str:
    users = [user for s in lineage(stage) for user in reversed(s.values("USER"))]
    return users[0] if users else "root"


def _pip_installs(stage: str) -> list[str]:
    """The `pip install` arguments of the stage the target's virtualenv is copied from, and its parents."""
    (copy,) = [v for v in stages()[stage].values("COPY") if v.startswith("--from=") and "/opt/remit" in v]
    source = copy.split()[0].removeprefix("--from=")
    installs = []
    for run in (run for s in lineage(source) for run in s.values("RUN")):
        for command in run.split("&&"):
            words = shlex.split(command)
            if words[:2] == ["pip", "install"]:
                installs.extend(words[2:])
    return installs


def test_the_default_target_is_the_service_and_reconcile_is_a_target() -> None:
    names = list(stages())
    assert names[-1] == "service"  # `docker build .` and compose's `build: .` build the last stage
    assert "reconcile" in names


def test_both_targets_run_as_an_unprivileged_user() -> None:
    for target in ("service", "reconcile"):
        assert _user(target).split(":")[0] == "10001", target  # remit, created in the base stage


def test_the_service_image_checks_its_own_health() -> None:
    (check,) = stages()["service"].values("HEALTHCHECK")
    assert "CMD" in check
    assert "http://127.0.0.1:8000/healthz" in check
    assert "8000" in stages()["service"].values("EXPOSE")


def test_the_build_stage_copies_everything_the_wheel_is_built_from() -> None:
    copied = {source.rstrip("/") for source in copied_sources("build")}
    assert _wheel_sources() <= copied, _wheel_sources() - copied
    # The literal list too, so that a setup.py which stopped naming a directory does not pass unnoticed.
    assert copied >= {"pyproject.toml", "setup.py", "README.md", "app", "alembic", "contracts", "corebank"}


def test_the_service_installs_remit_without_extras() -> None:
    assert _pip_installs("service") == ["."]


def test_the_reconcile_target_carries_the_spark_extra_and_java() -> None:
    assert ".[spark]" in _pip_installs("reconcile")
    runs = " ".join(stages()["reconcile"].values("RUN"))
    assert "openjdk-17-jre-headless" in shlex.split(runs)
    assert stages()["reconcile"].values("ENTRYPOINT") == ['["remit", "reconcile"]']


def test_the_base_image_is_python_311_on_debian_12() -> None:
    # Debian 12 (bookworm) is the release with openjdk-17; the project targets Python 3.11.
    assert {s.base for s in stages().values() if s.base not in stages()} == {"python:3.11-slim-bookworm"}


def test_secrets_and_local_state_stay_out_of_the_build_context() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().splitlines())
    assert {".env", ".git", ".venv"} <= ignored

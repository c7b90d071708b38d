"""docker-compose.yml: the services, their health, the start order, and no secret with a default.

Parsed with PyYAML; `docker compose config -q` also runs when the compose plugin is installed."""

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
SERVICES = {"rabbitmq", "postgres", "migrate", "consumer", "relay", "archiver", "admin"}
APP_SERVICES = ("consumer", "relay", "archiver", "admin")
SECRET = re.compile(r"\$\{([A-Z0-9_]*(PASSWORD|SECRET|TOKEN)[A-Z0-9_]*)([^}]*)\}")


def _load() -> dict[str, Any]:
    try:
        import yaml  # type: ignore[import-untyped, unused-ignore]  # types-PyYAML with the PyYAML pin
    except ImportError:
        message = "PyYAML is not installed (pip install PyYAML)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI: {message}", pytrace=False)
        pytest.skip(message)
    document = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(document, dict)
    return document


def test_the_services_and_their_images() -> None:
    services = _load()["services"]
    assert set(services) >= SERVICES
    assert services["rabbitmq"]["image"] == "rabbitmq:4-management"
    assert services["postgres"]["image"] == "postgres:16"


def test_every_service_is_health_checked_or_waits_for_healthy_ones() -> None:
    services = _load()["services"]
    for name, service in services.items():
        if name == "migrate":
            continue
        depends = service.get("depends_on") or {}
        waits_for_healthy = isinstance(depends, dict) and any(
            (d or {}).get("condition") == "service_healthy" for d in depends.values()
        )
        assert "healthcheck" in service or waits_for_healthy, name


def test_the_service_processes_start_after_the_migration_completed() -> None:
    services = _load()["services"]
    for name in APP_SERVICES:
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
        assert depends["rabbitmq"]["condition"] == "service_healthy", name


def test_no_secret_has_a_default() -> None:
    text = COMPOSE.read_text()
    found = SECRET.findall(text)
    assert found, "no password variables found: the pattern is out of date"
    without_guard = sorted({f"${{{name}{rest}}}" for name, _, rest in found if not rest.startswith(":?")})
    assert not without_guard, f"secrets without ':?' (a default or an empty value would be used): {without_guard}"


def _compose_command() -> list[str] | None:
    """`docker compose` (the plugin) where installed, else Debian's `docker-compose` (scripts/setup.sh)."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    return ["docker-compose"] if shutil.which("docker-compose") else None


def test_docker_compose_config_accepts_it() -> None:
    command = _compose_command()
    if command is None:
        message = "neither `docker compose` nor `docker-compose` is installed: run scripts/setup.sh"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    env = {**os.environ, "RABBITMQ_PASSWORD": "x1", "POSTGRES_PASSWORD": "x2", "REMIT_APP_DB_PASSWORD": "x3"}
    result = subprocess.run([*command, "-f", str(COMPOSE), "config", "-q"], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_docker_compose_refuses_to_start_without_the_passwords() -> None:
    command = _compose_command()
    if command is None:
        pytest.skip("no compose command (the previous test fails under CI=true)")
    env = {k: v for k, v in os.environ.items() if not k.endswith("PASSWORD")}
    result = subprocess.run([*command, "-f", str(COMPOSE), "config", "-q"], env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert "PASSWORD" in result.stderr

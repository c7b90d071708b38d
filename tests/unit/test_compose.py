"""docker-compose.yml: the services, their health, the start order, loopback ports, and no secret in the file.

Parsed with PyYAML; `docker compose config -q` also runs when the compose plugin is installed."""

import os
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
SERVICES = {"rabbitmq", "postgres", "migrate", "consumer", "relay", "archiver", "admin", "corebank", "corebank-migrate"}
APP_SERVICES = ("consumer", "relay", "archiver", "admin")
SECRET = re.compile(r"\$\{([A-Z0-9_]*(PASSWORD|SECRET|TOKEN)[A-Z0-9_]*)([^}]*)\}")


def _yaml() -> ModuleType:
    try:
        import yaml  # type: ignore[import-untyped, unused-ignore]  # types-PyYAML with the PyYAML pin
    except ImportError:
        message = "PyYAML is not installed (pip install PyYAML)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI: {message}", pytrace=False)
        pytest.skip(message)
    return yaml


def _load() -> dict[str, Any]:
    document = _yaml().safe_load(COMPOSE.read_text())
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
        checked = "test" in (service.get("healthcheck") or {})
        assert checked or waits_for_healthy, name


def test_the_service_processes_start_after_the_migration_completed() -> None:
    services = _load()["services"]
    for name in APP_SERVICES:
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
        assert depends["rabbitmq"]["condition"] == "service_healthy", name


def test_the_core_bank_is_its_own_service_with_its_own_database() -> None:
    services = _load()["services"]
    core, migrate = services["corebank"], services["corebank-migrate"]
    assert core["command"][:4] == ["python", "-m", "corebank", "serve"]
    assert migrate["command"] == ["python", "-m", "corebank", "db", "upgrade", "--create"]
    assert core["depends_on"]["corebank-migrate"]["condition"] == "service_completed_successfully"
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "/readyz" in " ".join(core["healthcheck"]["test"])
    url = core["environment"]["COREBANK_DATABASE_URL"]
    assert url == migrate["environment"]["COREBANK_DATABASE_URL"]
    assert url.startswith("postgresql+asyncpg://")
    assert url.rsplit("/", 1)[1] == "corebank"
    remit_database = services["consumer"]["environment"]["REMIT_DATABASE_URL"].rsplit("/", 1)[1]
    assert remit_database != "corebank"


def test_the_consumer_books_in_the_core_bank_service() -> None:
    services = _load()["services"]
    consumer = services["consumer"]
    assert consumer["environment"]["REMIT_CORE_BANKING_URL"] == "http://corebank:8700"
    assert consumer["depends_on"]["corebank"]["condition"] == "service_healthy"
    others = {name: services[name]["environment"] for name in ("relay", "archiver", "admin", "migrate")}
    assert all("REMIT_CORE_BANKING_URL" not in env for env in others.values())  # only the consumer books


def test_remit_calls_the_core_bank_with_the_token_the_core_knows_it_by() -> None:
    services = _load()["services"]
    core, consumer = services["corebank"]["environment"], services["consumer"]["environment"]
    token = consumer["REMIT_CORE_BANKING_TOKEN"]
    assert token == "${COREBANK_REMIT_TOKEN:?set COREBANK_REMIT_TOKEN}"
    assert core["COREBANK_CLIENT_TOKENS"] == '{"remit": ["' + token + '"]}'
    assert "--faults" not in services["corebank"]["command"]  # fault injection is for tests and the demo
    assert not {"COREBANK_FAULTS_ENABLED", "COREBANK_FAULTS_TOKEN"} & set(core)


def test_published_ports_listen_on_loopback_only() -> None:
    services = _load()["services"]
    published = {name: s["ports"] for name, s in services.items() if "ports" in s}
    assert set(published) >= {"rabbitmq", "postgres", "consumer", "admin", "corebank"}
    for name, ports in published.items():
        assert all(str(p).startswith("127.0.0.1:") for p in ports), (name, ports)


def test_no_secret_has_a_default() -> None:
    text = COMPOSE.read_text()
    found = SECRET.findall(text)
    assert found, "no password variables found: the pattern is out of date"
    without_guard = sorted({f"${{{name}{rest}}}" for name, _, rest in found if not rest.startswith(":?")})
    assert not without_guard, f"secrets without ':?' (a default or an empty value would be used): {without_guard}"


def test_no_password_is_written_in_the_file() -> None:
    """Every password, alone or inside a URL, is a required variable: nothing secret is committed."""
    services = _load()["services"]
    for name, service in services.items():
        for key, value in (service.get("environment") or {}).items():
            if re.search(r"PASS|SECRET|TOKEN", key):
                # The variable itself, or a document (the core's JSON of clients) holding only variables.
                rest = SECRET.sub("", str(value))
                assert SECRET.search(str(value)), (name, key)
                assert SECRET.fullmatch(str(value)) or not re.search(r"[A-Za-z0-9+/=_-]{12,}", rest), (name, key)
            for password in re.findall(r"://[^/:@]+:([^@]*)@", str(value)):
                assert SECRET.fullmatch(password), (name, key)


def test_the_example_env_names_every_required_variable_and_no_value() -> None:
    required = {name for name, _, rest in SECRET.findall(COMPOSE.read_text()) if rest.startswith(":?")}
    lines = [line for line in ENV_EXAMPLE.read_text().splitlines() if line and not line.startswith("#")]
    example = dict(line.split("=", 1) for line in lines)
    assert set(example) == required
    assert set(example.values()) == {""}  # a copy left unedited must not start anything


def test_the_reconciliation_job_runs_on_demand_from_its_own_target() -> None:
    services = _load()["services"]
    job = services["reconcile"]
    assert job["build"] == {"context": ".", "target": "reconcile"}  # Java 17 and the spark extra (Dockerfile)
    assert job["profiles"] == ["reconcile"]  # `docker compose up` leaves it alone; `run --rm reconcile` starts it
    assert "command" not in job  # the image's entrypoint is `remit reconcile`: run's arguments are its options
    assert job["environment"] == services["relay"]["environment"]
    assert job["depends_on"]["postgres"]["condition"] == "service_healthy"
    (volume,) = job["volumes"]
    assert volume.split(":")[1] == "/var/lib/remit/recon"
    assert volume.split(":")[0] in _load()["volumes"]


def test_long_running_processes_restart_and_state_their_own_health_check() -> None:
    """The image's check probes the consumer's port: every other process says what to check, or nothing."""
    services = _load()["services"]
    for name in ("consumer", "relay", "archiver", "admin", "corebank"):
        assert services[name]["restart"] == "unless-stopped", name
    for name, service in services.items():
        if service.get("build") == ".":
            assert "healthcheck" in service, name
            ports = [str(p).rsplit(":", 1)[1] for p in service.get("ports", [])]
            test = " ".join(service["healthcheck"].get("test", []))
            assert all(f"127.0.0.1:{port}/" in test for port in ports), name


def test_the_broker_and_the_database_keep_their_data_in_named_volumes() -> None:
    document = _load()
    services = document["services"]
    assert "postgres-data:/var/lib/postgresql/data" in services["postgres"]["volumes"]
    assert "rabbitmq-data:/var/lib/rabbitmq" in services["rabbitmq"]["volumes"]
    assert services["rabbitmq"]["hostname"] == "rabbitmq"  # RabbitMQ's data directory is named after the node
    assert {"postgres-data", "rabbitmq-data"} <= set(document["volumes"])


def test_no_key_is_written_twice() -> None:
    """PyYAML and compose keep the last of two equal keys silently (a merge of two edits can leave them)."""
    yaml = _yaml()

    def duplicates(node: Any) -> list[str]:
        if isinstance(node, yaml.MappingNode):
            keys = [key.value for key, _ in node.value]
            found = [
                f"{key.value} (line {key.start_mark.line + 1})" for key, _ in node.value if keys.count(key.value) > 1
            ]
            return found + [d for _, value in node.value for d in duplicates(value)]
        if isinstance(node, yaml.SequenceNode):
            return [d for item in node.value for d in duplicates(item)]
        return []

    assert duplicates(yaml.compose(COMPOSE.read_text())) == []


def _compose_command() -> list[str]:
    """`docker compose` (the plugin) where installed, else Debian's `docker-compose` (scripts/setup.sh).
    Missing: skipped locally, a failure under CI=true."""
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    message = "neither `docker compose` nor `docker-compose` is installed: run scripts/setup.sh"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI: {message}", pytrace=False)
    pytest.skip(message)


def test_docker_compose_config_accepts_it() -> None:
    command = _compose_command()
    passwords = ("RABBITMQ_PASSWORD", "POSTGRES_PASSWORD", "REMIT_APP_DB_PASSWORD", "REMIT_SYSTEM_DB_PASSWORD")
    env = {**os.environ, **{name: f"x{n}" for n, name in enumerate(passwords)}, "COREBANK_REMIT_TOKEN": "t" * 40}
    result = subprocess.run([*command, "-f", str(COMPOSE), "config", "-q"], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    without_token = {k: v for k, v in env.items() if k != "COREBANK_REMIT_TOKEN"}
    refused = subprocess.run(
        [*command, "-f", str(COMPOSE), "config", "-q"], env=without_token, capture_output=True, text=True
    )
    assert refused.returncode != 0
    assert "set COREBANK_REMIT_TOKEN" in refused.stderr


def test_every_service_process_gets_both_database_roles() -> None:
    services = _load()["services"]
    for name in APP_SERVICES:
        env = services[name]["environment"]
        assert "remit_app:" in env["REMIT_DATABASE_URL"], name
        assert "remit_system:" in env["REMIT_SYSTEM_DATABASE_URL"], name


def test_docker_compose_refuses_to_start_without_the_passwords() -> None:
    command = _compose_command()
    env = {k: v for k, v in os.environ.items() if not k.endswith("PASSWORD")}
    result = subprocess.run([*command, "-f", str(COMPOSE), "config", "-q"], env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert "PASSWORD" in result.stderr


def test_the_broker_refuses_messages_over_16_mib() -> None:
    rabbitmq = _load()["services"]["rabbitmq"]
    assert "./scripts/rabbitmq-remit.conf:/etc/rabbitmq/conf.d/90-remit.conf:ro" in rabbitmq["volumes"]
    settings = (ROOT / "scripts" / "rabbitmq-remit.conf").read_text().splitlines()
    assert "max_message_size = 16777216" in settings


def test_docker_compose_refuses_the_example_env_until_it_is_filled_in() -> None:
    command = _compose_command()
    env = {k: v for k, v in os.environ.items() if not k.endswith("PASSWORD")}
    result = subprocess.run(
        [*command, "--env-file", str(ENV_EXAMPLE), "-f", str(COMPOSE), "config", "-q"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode != 0
    assert "PASSWORD" in result.stderr

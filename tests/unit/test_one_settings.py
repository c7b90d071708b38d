"""One Settings for everything configured: the only reader of the environment in app/ and reconciliation/,
with the admin app's variables, and an environment that hands exactly these settings to a child process."""

import json
import os
import pwd
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr

from app.settings import Settings, environment_for

ROOT = Path(__file__).resolve().parents[2]
ENVIRONMENT_READ = re.compile(r"\bos\.environ\b|\bgetenv\(|\benviron\.get\(")


def test_nothing_but_settings_reads_the_environment() -> None:
    sources = [*(ROOT / "app").rglob("*.py"), *(ROOT / "reconciliation").rglob("*.py")]
    readers = [
        str(path.relative_to(ROOT))
        for path in sources
        if path != ROOT / "app" / "settings.py" and ENVIRONMENT_READ.search(path.read_text())
    ]
    assert readers == []


def test_the_admin_apps_variables_are_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REMIT_ADMIN_PORT", "9191")
    monkeypatch.setenv("REMIT_ADMIN_MAX_UPLOAD_BYTES", "4096")
    monkeypatch.setenv("REMIT_ADMIN_COOKIE_SECURE", "true")
    monkeypatch.setenv("REMIT_ADMIN_SESSION_IDLE_MINUTES", "5")
    monkeypatch.setenv("REMIT_ADMIN_MAX_REQUEST_BYTES", "2048")
    monkeypatch.setenv("REMIT_ADMIN_AUTH_SOURCE_FAILURES", "3")
    monkeypatch.setenv("REMIT_ADMIN_AUTH_KEY_REFILL_SECONDS", "90")
    settings = Settings()
    assert (settings.admin_port, settings.admin_max_upload_bytes) == (9191, 4096)
    assert (settings.admin_cookie_secure, settings.admin_session_idle_minutes) == (True, 5)
    assert settings.admin_max_request_bytes == 2048
    assert (settings.admin_auth_source_failures, settings.admin_auth_key_refill_seconds) == (3, 90.0)


@pytest.mark.parametrize(
    ("variables", "actor"),
    [
        ({"REMIT_ACTOR": "night-ops", "USER": "alice", "LOGNAME": "root"}, "night-ops"),
        ({"USER": "alice", "LOGNAME": "root"}, "alice"),
        ({"LOGNAME": "root"}, "root"),
        ({}, pwd.getpwuid(os.getuid()).pw_name),  # none set (cron, systemd): the account, as the docs say
    ],
)
def test_the_audit_actor_is_remit_actor_else_user_else_logname_else_the_account(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], actor: str
) -> None:
    for name in ("REMIT_ACTOR", "USER", "LOGNAME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert Settings().actor == actor


def test_a_child_started_with_environment_for_runs_with_the_same_settings(tmp_path: Path) -> None:
    settings = Settings(
        amqp_url="amqp://u:p@127.0.0.1:5672/demo",
        retry_delays_seconds=[0.5, 1, 2],
        tier_workers={"free": 2, "basic": 3, "premium": 5, "enterprise": 10},
        trusted_publishers=["ingest-svc"],
        core_banking_url="http://127.0.0.1:8700",
        core_banking_token=SecretStr("s" * 40),
        admin_cookie_secure=True,
        log_level="WARNING",
    )
    # What the parent's environment says otherwise must not leak into the child.
    inherited = {**environment_for(Settings()), "REMIT_SYSTEM_DATABASE_URL": "postgresql://stale@nowhere/x"}
    child = subprocess.run(
        [sys.executable, "-c", "from app.settings import Settings; print(Settings().model_dump_json())"],
        env=environment_for(settings, inherited),
        cwd=tmp_path,  # no .env here
        capture_output=True,
        text=True,
        check=True,
    )
    seen = json.loads(child.stdout)
    assert seen == json.loads(settings.model_dump_json())  # a secret shows as asterisks on both sides
    assert seen["system_database_url"] is None
    assert environment_for(settings, inherited)["REMIT_CORE_BANKING_TOKEN"] == "s" * 40  # the secret, not its mask


def test_the_core_token_is_required_with_a_core_and_never_shown(capsys: pytest.CaptureFixture[str]) -> None:
    token = "remit-at-the-core-" + "x" * 30
    with pytest.raises(ValueError, match="REMIT_CORE_BANKING_URL is set without REMIT_CORE_BANKING_TOKEN"):
        Settings(core_banking_url="http://127.0.0.1:8700")
    settings = Settings(core_banking_url="http://127.0.0.1:8700", core_banking_token=SecretStr(token))
    for shown in (repr(settings), str(settings), settings.model_dump_json(), str(settings.model_dump())):
        assert token not in shown
    assert settings.core_banking_headers() == {"Authorization": f"Bearer {token}"}
    with pytest.raises(ValueError, match="prefetch") as invalid:  # another field's error quotes no token either
        Settings(core_banking_url="http://127.0.0.1:8700", core_banking_token=SecretStr(token), prefetch=-1)
    assert token not in str(invalid.value)
    with pytest.raises(ValueError, match="CLIENT_CERT_FILE and REMIT_CORE_BANKING_CLIENT_KEY_FILE go together"):
        Settings(core_banking_client_cert_file="/etc/remit/core-client.pem")

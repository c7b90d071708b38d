"""Real-service plumbing for tests: a fresh PostgreSQL database and RabbitMQ vhost, service processes.

A missing service skips the test locally and fails it under CI=true: CI must never pass by skipping.
"""

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import asyncpg
import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from app.messaging.management import Management
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory

ROOT = Path(__file__).resolve().parents[2]
PG_ADMIN_DSN = os.environ.get("REMIT_TEST_PG_ADMIN_DSN", "postgresql://root@127.0.0.1:5432/postgres")
AMQP_BASE = os.environ.get("REMIT_TEST_AMQP_BASE", "amqp://guest:guest@127.0.0.1:5672")
MANAGEMENT_URL = os.environ.get("REMIT_TEST_MANAGEMENT_URL", "http://127.0.0.1:15672")
MANAGEMENT_AUTH = ("guest", "guest")
TEST_RUN = ["-m", "tests.support.run"]
TEST_CORE_VARIABLES = (
    "TEST_CORE_CLOSED_ACCOUNTS",
    "TEST_CORE_FLAKY_ACCOUNTS",
    "TEST_CORE_TRANSIENT_RATE",
)  # service processes with fault hooks (tests/support/run.py)


def service_missing(what: str) -> None:
    message = f"{what} is not reachable; start it with scripts/services.sh (or `docker compose up -d`)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI: {message}", pytrace=False)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def unique(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


async def create_database(prefix: str = "remit_test_") -> str:
    name = unique(prefix)
    try:
        admin = await asyncpg.connect(PG_ADMIN_DSN, timeout=5)
    except (OSError, asyncpg.PostgresError):
        service_missing("PostgreSQL")
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    return f"postgresql+asyncpg://root@127.0.0.1:5432/{name}"


async def drop_database(url: str) -> None:
    name = url.rsplit("/", 1)[1]
    admin = await asyncpg.connect(PG_ADMIN_DSN)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


def management() -> Management:
    """The management API client remit uses, pointed at the test broker."""
    return Management(MANAGEMENT_URL.replace("://", f"://{MANAGEMENT_AUTH[0]}:{MANAGEMENT_AUTH[1]}@", 1))


def create_vhost() -> str:
    vhost = unique("remit_test_")
    try:
        with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH, timeout=10) as client:
            client.put(f"/api/vhosts/{vhost}").raise_for_status()
            permissions = {"configure": ".*", "write": ".*", "read": ".*"}
            client.put(f"/api/permissions/{vhost}/guest", json=permissions).raise_for_status()
    except httpx.HTTPError:
        service_missing("RabbitMQ management API")
    return vhost


def delete_vhost(vhost: str) -> None:
    with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH, timeout=30) as client:
        client.delete(f"/api/vhosts/{vhost}")


APP_ROLE = "remit_app"
SYSTEM_ROLE = "remit_system"


def app_database_url(owner_url: str) -> str:
    """The same database as the service's tenant-scoped code sees it: as remit_app, bound by row-level
    security to one tenant at a time."""
    return owner_url.replace("://root@", f"://{APP_ROLE}@", 1)


def system_database_url(owner_url: str) -> str:
    """The same database as the relay, the archiver and operators see it: as remit_system, the one role
    the policies let into the system scope."""
    return owner_url.replace("://root@", f"://{SYSTEM_ROLE}@", 1)


def amqp_url(vhost: str) -> str:
    return f"{AMQP_BASE}/{quote(vhost, safe='')}"


def queue_depth(vhost: str, queue: str) -> int:
    with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH, timeout=10) as client:
        response = client.get(f"/api/queues/{quote(vhost, safe='')}/{quote(queue, safe='')}")
        response.raise_for_status()
        return int(response.json().get("messages", 0))


@dataclass
class ServiceEnv:
    """The environment a remit process needs to talk to this test's database and vhost."""

    database_url: str
    vhost: str
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def amqp_url(self) -> str:
        return amqp_url(self.vhost)

    def env(self, **overrides: str) -> dict[str, str]:
        return {
            **os.environ,
            "REMIT_DATABASE_URL": app_database_url(self.database_url),
            "REMIT_SYSTEM_DATABASE_URL": system_database_url(self.database_url),
            "REMIT_MIGRATION_DATABASE_URL": self.database_url,
            "REMIT_AMQP_URL": self.amqp_url,
            "REMIT_RETRY_DELAYS_SECONDS": "[0.2, 0.5, 1.0]",
            "REMIT_LOG_LEVEL": "WARNING",
            **self.extra,
            **overrides,
        }


@dataclass(frozen=True)
class OwnWorld:
    """This test's vhost on a database of its own (the `own_world` fixture): what `service_env`, `settings`,
    `engine` and `uow_factory` give on the session's shared database."""

    service_env: ServiceEnv
    settings: Settings
    engine: AsyncEngine
    uow_factory: UnitOfWorkFactory


class ServiceProcess:
    """A remit process (consumer or relay) started like production: a real OS process."""

    port: int | None = None

    def __init__(self, args: list[str], env: Mapping[str, str], log_path: Path) -> None:
        self.log_path = log_path
        self._log = log_path.open("ab")
        self.proc = subprocess.Popen(args, env=dict(env), cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT)

    @classmethod
    def consumer(
        cls,
        env: Mapping[str, str],
        log_path: Path,
        port: int | None = None,
        *,
        kill_after_commits: int | None = None,
        kill_after_core: int | None = None,
        kill_after_dead_letters: int | None = None,
    ) -> "ServiceProcess":
        """`faststream run app.main:app`; with `kill_after_commits`, the same app through the test-only entry
        point, SIGKILLing itself after that many group commits, before their acks; with `kill_after_core`, after
        that many bookings the core answered, before remit's commit; with `kill_after_dead_letters`, after that many
        dead letters the broker confirmed, before their acks; with a TEST_CORE_* variable in `env`,
        through that entry point too, booking with the test-only core's failure rules."""
        port = port or free_port()
        hooks = [
            ("--kill-after-commits", kill_after_commits),
            ("--kill-after-core", kill_after_core),
            ("--kill-after-dead-letters", kill_after_dead_letters),
        ]
        flags = [part for flag, n in hooks if n is not None for part in (flag, str(n))]
        if flags or any(name in env for name in TEST_CORE_VARIABLES):
            args = [*TEST_RUN, "consumer", "--port", str(port), *flags]
        else:
            args = ["-m", "faststream", "run", "app.main:app", "--port", str(port)]
        process = cls([sys.executable, *args], env, log_path)
        process.port = port
        return process

    @classmethod
    def relay(
        cls, env: Mapping[str, str], log_path: Path, *, kill_after_publishes: int | None = None
    ) -> "ServiceProcess":
        """`remit relay`; with `kill_after_publishes`, SIGKILLing itself after that many confirmed batches, before
        marking them published (the test-only entry point)."""
        if kill_after_publishes is None:
            return cls([sys.executable, "-m", "app.cli", "relay"], env, log_path)
        args = [*TEST_RUN, "relay", "--kill-after-publishes", str(kill_after_publishes)]
        return cls([sys.executable, *args], env, log_path)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)
        self._log.close()

    def stop(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._log.close()
        return code

    def wait_exit(self, timeout: float) -> int:
        """The exit code; a process still running after `timeout` is stopped (so a failing test leaves no
        consumer behind: one armed to die after its first commit outlived its test when the commit failed)."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise

    async def ready(self, timeout: float = 90) -> None:
        """Wait until the consumer answers /readyz (its pools consume): a test that must not race its start-up."""
        assert self.port is not None, "only a consumer process has a readiness route"

        async def answers() -> bool:
            try:
                async with httpx.AsyncClient(timeout=2) as client:
                    response = await client.get(f"http://127.0.0.1:{self.port}/readyz")
            except httpx.HTTPError:
                return False
            return response.status_code in (200, 503) and consuming(response.json())

        await eventually(answers, timeout=timeout, poll=0.3)

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")


def consuming(readiness: dict[str, Any]) -> bool:
    """The consumer's own checks pass. Its "relay" check is about the relay, another process, and the
    session's database keeps other tests' unpublished rows: it may be red while this consumer works."""
    return all(ok is True for check, ok in readiness["checks"].items() if check != "relay")


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 30, poll: float = 0.2) -> None:
    """Await `check()` until it is true or the timeout passes."""
    deadline = time.monotonic() + timeout
    while True:
        if await check():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await asyncio.sleep(poll)

"""Every process of remit's that listens (the admin app and console, the consumer's health and metrics, its
worker processes, the relay's metrics, the reference core) listens on loopback unless told otherwise:
started here as users start them, with no address given, and their listening sockets read from the
operating system (psutil). The archiver listens on nothing. Exposing one is a decision made with
`--host` (docker-compose does it inside containers and publishes the ports on 127.0.0.1 only)."""

import asyncio
import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import uvicorn

from app.settings import Settings
from corebank.settings import CoreBankSettings
from tests.utils.admin import start_admin
from tests.utils.corebank import create_corebank_database, start_corebank
from tests.utils.services import ServiceEnv, ServiceProcess, drop_database, free_port

pytestmark = pytest.mark.integration

LOOPBACK = {"127.0.0.1", "::1"}


def listening(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every listening TCP socket of the process and its children."""
    try:
        parent = psutil.Process(pid)
        processes = [parent, *parent.children(recursive=True)]
    except psutil.NoSuchProcess:
        return set()
    found = set()
    for process in processes:
        with contextlib.suppress(psutil.Error):
            for connection in process.net_connections(kind="inet"):
                if connection.status == psutil.CONN_LISTEN:
                    found.add((connection.laddr.ip, connection.laddr.port))
    return found


async def listens_on(process: ServiceProcess, port: int, timeout: float = 90) -> set[str]:
    """The addresses the process listens on, once it listens on `port`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.proc.poll() is None, process.log()
        sockets = listening(process.proc.pid)
        if any(bound == port for _, bound in sockets):
            return {address for address, _ in sockets}
        await asyncio.sleep(0.3)
    raise AssertionError(f"nothing listens on {port} after {timeout}s:\n{process.log()}")


def test_the_defaults_are_loopback() -> None:
    assert Settings().admin_host == "127.0.0.1"
    assert CoreBankSettings().host == "127.0.0.1"
    # `faststream run app.main:app` (the consumer) takes uvicorn's default when no --host is given.
    assert uvicorn.Config(app="app.main:app").host == "127.0.0.1"


@pytest.fixture
def started() -> Iterator[list[ServiceProcess]]:
    """The processes a test started, stopped after it whatever happened."""
    processes: list[ServiceProcess] = []
    yield processes
    for process in processes:
        process.stop()


async def test_every_process_listens_on_loopback_unless_told_otherwise(
    service_env: ServiceEnv, logs_dir: Path, started: list[ServiceProcess]
) -> None:
    env = service_env.env()
    admin = start_admin(env, logs_dir / "admin.log")
    consumer = ServiceProcess.consumer(env, logs_dir / "consumer.log")
    workers_port = free_port()
    workers = ServiceProcess(
        [sys.executable, "-m", "faststream", "run", "app.main:app", "--workers", "2", "--port", str(workers_port)],
        env,
        logs_dir / "consumers.log",
    )
    relay_port = free_port()
    relay = ServiceProcess(
        [sys.executable, "-m", "app.cli", "relay"],
        {**env, "REMIT_RELAY_METRICS_PORT": str(relay_port)},
        logs_dir / "relay.log",
    )
    archiver = ServiceProcess(
        [sys.executable, "-m", "faststream", "run", "app.deadletters.archiver_app:app"], env, logs_dir / "archiver.log"
    )
    core_database = await create_corebank_database()
    core = start_corebank(core_database, logs_dir / "core.log", faults=False)
    started.extend([admin, consumer, workers, relay, archiver, core.process])
    try:
        expected = {
            "admin": (admin, admin.port),
            "consumer": (consumer, consumer.port),
            "consumer --workers 2": (workers, workers_port),
            "relay metrics": (relay, relay_port),
            "core": (core.process, core.process.port),
        }
        for name, (process, port) in expected.items():
            assert port is not None
            addresses = await listens_on(process, port)
            assert addresses <= LOOPBACK, (name, addresses)
        assert archiver.proc.poll() is None, archiver.log()
        assert listening(archiver.proc.pid) == set()
    finally:
        core.process.stop()
        await drop_database(core_database)


def test_no_process_is_started_on_every_interface_by_remit_itself() -> None:
    """Only deployment files (the image, compose) name 0.0.0.0, inside a container; no code path does."""
    root = Path(__file__).resolve().parents[2]
    sources = [*(root / "app").rglob("*.py"), *(root / "corebank").rglob("*.py")]
    code = {path: path.read_text() for path in sources}
    named = [
        str(path.relative_to(root))
        for path, text in code.items()
        for line in text.splitlines()
        if "0.0.0.0" in line and "Example:" not in line
    ]
    assert named == []
    assert len(code) > 100  # the scan read the sources

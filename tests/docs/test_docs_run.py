"""Docs that run: every fenced block of README.md and docs/*.md is classified, and what a user would run is
run against the real services, so that a document cannot disagree with the code (docs/testing.md).

Sessions named `demo*` start from the state `remit demo` leaves (one demo run, on its own database and vhost,
shared by them in document order); every other session gets a fresh, migrated database and vhost of its own.
"""

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from app.storage.migrations import upgrade_to_head
from tests.docs.blocks import ROOT, Block, all_blocks
from tests.docs.runner import Ran, run_block, session_dir, stop_background, write_file
from tests.docs.sessions import PRELUDES, prelude_block
from tests.utils.services import (
    MANAGEMENT_AUTH,
    MANAGEMENT_URL,
    ServiceEnv,
    create_database,
    create_vhost,
    delete_vhost,
    drop_database,
    unique,
)

BLOCKS = all_blocks()
RUN_KINDS = ("run", "output", "file")


def sessions() -> dict[str, list[Block]]:
    """Session name -> its blocks in document order (README.md first, then docs/ by name)."""
    found: dict[str, list[Block]] = {}
    for block in BLOCKS:
        if block.marker and block.marker.kind in RUN_KINDS:
            for session in block.marker.sessions:
                found.setdefault(session, []).append(block)
    return found


def test_every_block_is_classified() -> None:
    """A new block cannot slip in unclassified: each needs a marker on the line before its fence."""
    unmarked = [
        f"{b.where} ({b.language or 'no language'}): {b.marker_error or 'no <!-- docs: ... --> marker'}"
        for b in BLOCKS
        if b.marker is None
    ]
    assert not unmarked, "blocks without a valid marker (docs/testing.md, 'Docs that run'):\n" + "\n".join(unmarked)


def test_every_session_has_its_prelude_or_none() -> None:
    assert set(PRELUDES) <= set(sessions()), f"preludes for sessions no block uses: {set(PRELUDES) - set(sessions())}"


def user_env(service: ServiceEnv) -> dict[str, str]:
    """The session's database and vhost, `remit` (the venv's bin) and the docs helpers (tests/docs/bin) on PATH."""
    path = f"{Path(sys.executable).parent}:{ROOT / 'tests/docs/bin'}:{os.environ.get('PATH', '')}"
    psql_url = service.database_url.replace("postgresql+asyncpg://", "postgresql://", 1)  # SQL blocks, as the owner
    return service.env(PATH=path, COLUMNS="200", TERM="dumb", DOCS_PSQL_URL=psql_url)


def remove_tenant_users(vhost: str) -> None:
    """The RabbitMQ users `remit tenants add` made for this vhost (`tenant-<id>@<vhost>`): users are the broker's."""
    with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH, timeout=30) as client:
        for user in client.get("/api/users").json():
            if user["name"].endswith(f"@{vhost}"):
                client.delete(f"/api/users/{quote(user['name'], safe='')}")


@pytest.fixture(scope="module")
async def demo_env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ServiceEnv]:
    """One `remit demo` run, its database and vhost left as it ends, for every `demo*` session."""
    name = unique("remit_docs_demo_")
    database = f"postgresql+asyncpg://root@127.0.0.1:5432/{name}"
    logs = tmp_path_factory.mktemp("docs-demo") / "logs"
    try:
        result = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "app.cli", "demo", "--name", name, "--logs", str(logs)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        yield ServiceEnv(database_url=database, vhost=name)
    finally:
        await drop_database(database)
        remove_tenant_users(name)
        delete_vhost(name)


@pytest.fixture
async def fresh_env() -> AsyncIterator[ServiceEnv]:
    database = await create_database()
    vhost = create_vhost()
    try:
        await upgrade_to_head(database)
        yield ServiceEnv(database_url=database, vhost=vhost)
    finally:
        await drop_database(database)
        await drop_database(database + "_corebank")  # the core bank's own, when the session made one
        remove_tenant_users(vhost)
        delete_vhost(vhost)


DEMO_SESSIONS = [name for name in sessions() if name.startswith("demo")]
FRESH_SESSIONS = [name for name in sessions() if not name.startswith("demo")]


@pytest.mark.e2e
@pytest.mark.parametrize("session", FRESH_SESSIONS)
async def test_the_session_runs_as_documented(session: str, fresh_env: ServiceEnv, tmp_path: Path) -> None:
    await run_session(session, fresh_env, tmp_path)


@pytest.mark.e2e
@pytest.mark.timeout(1500)  # the first waits for the demo (4-6 minutes on a loaded machine), demo runs Spark twice
@pytest.mark.parametrize("session", DEMO_SESSIONS)
async def test_after_the_demo_the_session_runs_as_documented(
    session: str, demo_env: ServiceEnv, tmp_path: Path
) -> None:
    await run_session(session, demo_env, tmp_path)


async def run_session(session: str, service: ServiceEnv, tmp_path: Path) -> None:
    env = user_env(service)
    cwd = session_dir(tmp_path / session)
    blocks = sessions()[session]
    for block in blocks:
        if block.marker and block.marker.kind == "file":
            write_file(block, cwd)  # before any command: a command may name a file shown further on
    failures: list[str] = []
    try:
        for block in [*prelude_block(session), *(b for b in blocks if b.marker and b.marker.kind != "file")]:
            ran: Ran = await asyncio.to_thread(run_block, block, cwd, env)
            problem = ran.failure()
            if problem:
                failures.append(problem)
                break  # later blocks of the session build on this one
    finally:
        failures += await asyncio.to_thread(stop_background, cwd)
    assert not failures, "\n\n".join(failures)

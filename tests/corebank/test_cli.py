"""`python -m corebank` as an operator runs it: db upgrade [--create], serve refusing a database that is not at
head, accounts load, faults off unless enabled, and `remit core-bank` delegating to it."""

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from corebank.database import NO_AUTOVACUUM
from corebank.migrations import VERSION_TABLE
from corebank.tables import metadata
from tests.utils.corebank import (
    CORE_TOKEN,
    create_corebank_database,
    dsn,
    fresh_account,
    start_corebank,
    wait_ready,
)
from tests.utils.services import ROOT, create_database, drop_database, unique

pytestmark = pytest.mark.integration
CLIENTS = json.dumps({"remit": [CORE_TOKEN]})


async def run(*args: str, database_url: str, program: tuple[str, ...] = ("-m", "corebank")) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *program,
        *args,
        cwd=ROOT,
        env={**os.environ, "COREBANK_DATABASE_URL": database_url, "COREBANK_CLIENT_TOKENS": CLIENTS},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@pytest.fixture
async def missing_database() -> AsyncIterator[str]:
    """The URL of a database that does not exist yet (dropped afterwards if a test created it)."""
    url = f"postgresql+asyncpg://root@127.0.0.1:5432/{unique('corebank_test_')}"
    yield url
    await drop_database(url)


@pytest.fixture
async def empty_database() -> AsyncIterator[str]:
    url = await create_database(prefix="corebank_test_")
    yield url
    await drop_database(url)


@pytest.fixture
async def migrated_database() -> AsyncIterator[str]:
    url = await create_corebank_database()
    yield url
    await drop_database(url)


def _diff(connection: Connection) -> list[Any]:
    opts = {"version_table": VERSION_TABLE, "compare_type": True, "compare_server_default": True}
    return list(compare_metadata(MigrationContext.configure(connection, opts=opts), metadata))


async def test_db_upgrade_creates_and_migrates_the_database_once(missing_database: str) -> None:
    first = await run("db", "upgrade", "--create", database_url=missing_database)
    again = await run("db", "upgrade", "--create", database_url=missing_database)

    assert first[0] == 0, first
    assert "created and migrated" in first[1]
    assert again[0] == 0, again
    assert "created" not in again[1]
    engine = create_async_engine(missing_database)
    try:
        async with engine.connect() as conn:
            diff = await conn.run_sync(_diff)
    finally:
        await engine.dispose()
    assert not diff, f"corebank/migrations and corebank/tables.py differ: {diff}"


async def test_db_upgrade_without_create_does_not_create(missing_database: str) -> None:
    code, _, err = await run("db", "upgrade", database_url=missing_database)

    assert code == 2
    assert err.strip().count("\n") == 0, err
    assert "does not exist: run `python -m corebank db upgrade --create`" in err


async def test_serve_refuses_a_database_that_is_not_at_head(empty_database: str) -> None:
    code, _, err = await run("serve", "--port", "1", database_url=empty_database)

    assert code == 2
    assert err.strip().count("\n") == 0, err
    assert "schema revision none" in err
    assert "python -m corebank db upgrade" in err


async def test_serve_refuses_a_missing_database_with_the_fix(missing_database: str) -> None:
    code, _, err = await run("serve", "--port", "1", database_url=missing_database)

    assert code == 2
    assert err.strip().count("\n") == 0, err
    assert "python -m corebank db upgrade --create" in err


async def test_accounts_load_opens_each_account_once(migrated_database: str, tmp_path: Path) -> None:
    accounts = [fresh_account() for _ in range(3)]
    lines = [
        {"bsb": a.bsb, "account_number": a.number, "currency": "AUD", "opening_balance_cents": 100 * i}
        for i, a in enumerate(accounts)
    ]
    lines[2]["status"] = "closed"
    path = tmp_path / "accounts.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")

    first = await run("accounts", "load", str(path), database_url=migrated_database)
    again = await run("accounts", "load", str(path), database_url=migrated_database)

    assert first[:2] == (0, "opened 3 accounts, 0 already present\n"), first
    assert again[:2] == (0, "opened 0 accounts, 3 already present\n"), again
    conn = await asyncpg.connect(dsn(migrated_database))
    try:
        rows = await conn.fetch("SELECT account_number, balance_cents, status FROM accounts ORDER BY balance_cents")
    finally:
        await conn.close()
    assert [tuple(r) for r in rows] == [(a.number, 100 * i, "open") for i, a in enumerate(accounts[:2])] + [
        (accounts[2].number, 200, "closed")
    ]


async def test_a_bad_line_loads_nothing_and_names_the_line_not_the_account(
    migrated_database: str, tmp_path: Path
) -> None:
    good, bad = fresh_account(), fresh_account()
    path = tmp_path / "accounts.jsonl"
    path.write_text(
        json.dumps({"bsb": good.bsb, "account_number": good.number, "currency": "AUD", "opening_balance_cents": 1})
        + "\n"
        + json.dumps({"bsb": bad.bsb, "account_number": bad.number, "currency": "AUD", "opening_balance_cents": 1.5})
        + "\n"
    )

    code, out, err = await run("accounts", "load", str(path), database_url=migrated_database)

    assert code == 2
    assert "line 2" in err
    assert "opening_balance_cents" in err
    assert bad.number not in err + out
    conn = await asyncpg.connect(dsn(migrated_database))
    try:
        assert await conn.fetchval("SELECT count(*) FROM accounts") == 0
    finally:
        await conn.close()


async def test_faults_are_off_unless_the_process_enables_them(migrated_database: str, tmp_path: Path) -> None:
    core = start_corebank(migrated_database, tmp_path / "corebank.log", faults=False)
    try:
        await wait_ready(core)
        async with httpx.AsyncClient(base_url=core.url, headers=core.fault_headers) as client:
            put = await client.put("/_faults", json={"drop_rate": 1.0})
            get = await client.get("/_faults")
    finally:
        core.process.stop()

    # Not mounted at all: the faults token opens nothing in a process started without fault injection.
    assert (put.status_code, put.json()["error"]["code"]) == (404, "not_found")
    assert get.status_code == 404


async def test_serve_warns_when_the_server_runs_no_autovacuum(migrated_database: str, tmp_path: Path) -> None:
    conn = await asyncpg.connect(dsn(migrated_database))
    try:
        autovacuum = await conn.fetchval("SHOW autovacuum")
    finally:
        await conn.close()
    core = start_corebank(migrated_database, tmp_path / "corebank.log", faults=False)
    try:
        await wait_ready(core)
        log = core.process.log()
    finally:
        core.process.stop()

    assert (NO_AUTOVACUUM in log) == (autovacuum != "on")


async def test_remit_core_bank_is_the_same_command(missing_database: str) -> None:
    code, out, _ = await run(
        "core-bank", "db", "upgrade", "--create", database_url=missing_database, program=("-m", "app.cli")
    )

    assert code == 0
    assert "created and migrated" in out

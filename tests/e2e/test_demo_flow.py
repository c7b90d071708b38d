"""The demo's flow end to end on a fresh database and vhost: CLI, relay and consumer as real processes."""

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text

from app.resources import uow_factory_for
from app.storage.engine import make_engine
from app.storage.migrations import upgrade_to_head
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.factories import new_tenant_id
from tests.utils.services import ROOT, ServiceEnv, ServiceProcess, create_database, drop_database, eventually

pytestmark = pytest.mark.e2e
EXAMPLES = ROOT / "examples"


@pytest.fixture
async def fresh_env(vhost: str) -> AsyncIterator[ServiceEnv]:
    url = await create_database()
    await upgrade_to_head(url)
    yield ServiceEnv(database_url=url, vhost=vhost)
    await drop_database(url)


def remit(env: ServiceEnv, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        env=env.env(COLUMNS="200"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def processed_by_currency(uow: UnitOfWorkFactory, tenant: str) -> dict[str, dict[str, int]]:
    query = text(
        "SELECT currency, count(*) AS n, sum(amount_cents) AS cents FROM ledger "
        "WHERE tenant_id = :t GROUP BY currency ORDER BY currency"
    )
    async with uow() as u:
        rows = (await u.connection.execute(query, {"t": tenant})).all()
    return {r.currency: {"count": r.n, "amount_cents": int(r.cents)} for r in rows}


async def test_demo_flow_processes_exactly_what_was_accepted(fresh_env: ServiceEnv, logs_dir: Path) -> None:
    expected = json.loads((EXAMPLES / "EXPECTED.json").read_text())["tenants"]
    tenants = {name: new_tenant_id() for name in expected}
    for tenant in tenants.values():
        assert remit(fresh_env, "tenants", "add", tenant, "--name", tenant).returncode == 0

    consumer = ServiceProcess.consumer(fresh_env.env(), logs_dir / "consumer.log")
    relay = ServiceProcess.relay(fresh_env.env(), logs_dir / "relay.log")
    engine = make_engine(fresh_env.database_url, pool_size=2)
    uow = uow_factory_for(engine)
    try:
        for name, tenant in tenants.items():
            submitted = remit(fresh_env, "submit", str(EXAMPLES / expected[name]["file"]), "--tenant", tenant)
            assert submitted.returncode == 1, submitted.stderr  # rejected rows make the exit code non-zero
            assert f"{expected[name]['accepted']} accepted, {expected[name]['rejected']} rejected" in submitted.stdout

        async def all_processed() -> bool:
            for name, tenant in tenants.items():
                got = await processed_by_currency(uow, tenant)
                if sum(c["count"] for c in got.values()) < expected[name]["accepted"]:
                    return False
            return True

        await eventually(all_processed, timeout=120)
        for name, tenant in tenants.items():
            assert await processed_by_currency(uow, tenant) == expected[name]["by_currency"]
    finally:
        relay.stop()
        consumer.stop()
        await engine.dispose()

    status = remit(fresh_env, "status", "--tenant", tenants["anz"])
    assert status.returncode == 0
    assert "AUD" in status.stdout
    assert f"({expected['anz']['by_currency']['AUD']['amount_cents']:,})" in status.stdout  # beside the dollars


async def test_cli_explains_bad_arguments(fresh_env: ServiceEnv) -> None:
    bad_tenant = remit(fresh_env, "submit", str(EXAMPLES / "anz_20250501.csv"), "--tenant", "Bad.Tenant")
    assert bad_tenant.returncode == 2
    assert "tenant id 'Bad.Tenant' is not valid" in bad_tenant.stderr
    missing_file = remit(fresh_env, "submit", "no-such-file.csv", "--tenant", "anz")
    assert missing_file.returncode == 2
    assert "does not exist" in missing_file.stderr
    unknown = remit(fresh_env, "submit", str(EXAMPLES / "anz_20250501.csv"), "--tenant", "ghost")
    assert unknown.returncode == 2
    assert "unknown tenant 'ghost'" in unknown.stderr

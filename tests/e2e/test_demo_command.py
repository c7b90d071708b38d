"""`remit demo` end to end on its own database and vhost, then the ledger checked independently of it."""

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from app.bootstrap import uow_factory_for
from app.storage.engine import make_engine
from tests.utils.services import ROOT, delete_vhost, drop_database, unique

pytestmark = pytest.mark.e2e


@pytest.fixture
def demo_name() -> Iterator[str]:
    name = unique("remit_e2e_demo_")
    yield name
    delete_vhost(name)


async def test_the_demo_moves_every_payment_exactly_once(demo_name: str, tmp_path: Path) -> None:
    env_db = f"postgresql+asyncpg://root@127.0.0.1:5432/{demo_name}"
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "app.cli", "demo", "--name", demo_name, "--logs", str(tmp_path / "logs")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        assert "demo finished: everything matched" in result.stdout
        expected = json.loads((ROOT / "examples" / "EXPECTED.json").read_text())["tenants"]
        engine = make_engine(env_db, pool_size=1)
        uow = uow_factory_for(engine)
        try:
            async with uow() as u:
                booked = (
                    await u.connection.execute(
                        text(
                            "SELECT tenant_id, currency, count(*) AS n, sum(amount_cents) AS cents, "
                            "count(DISTINCT message_id) AS ids FROM ledger GROUP BY 1, 2"
                        )
                    )
                ).all()
                open_dead = (
                    await u.connection.execute(
                        text("SELECT tenant_id, count(*) FROM dead_letters WHERE status = 'open' GROUP BY 1")
                    )
                ).all()
        finally:
            await engine.dispose()
        for row in booked:
            assert row.n == row.ids  # no message_id moved money twice
            want = expected[row.tenant_id]["processed_final"][row.currency]
            assert (row.n, int(row.cents)) == (want["count"], want["amount_cents"])
        assert {t for t, _ in open_dead} == set(expected)
        for tenant, n in open_dead:
            assert n == sum(v["count"] for v in expected[tenant]["dead_lettered_closed"].values())
    finally:
        await drop_database(env_db)

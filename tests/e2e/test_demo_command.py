"""`remit demo` end to end on its own database and vhost, then the ledger checked independently of it."""

import asyncio
import csv
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from app.resources import uow_factory_for
from app.storage.engine import make_engine
from tests.utils.pain002 import read_pain002, xsd_errors
from tests.utils.services import ROOT, delete_vhost, drop_database, unique

pytestmark = pytest.mark.e2e


@pytest.fixture
def demo_name() -> Iterator[str]:
    name = unique("remit_e2e_demo_")
    yield name
    delete_vhost(name)


@pytest.mark.timeout(660)  # the demo's own processes (the core among them) and the reconciliation, on a shared machine
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
        _the_reconciliation_report_matches(tmp_path / "logs" / "reconciliation" / "summary.csv", expected)
        _the_status_reports_are_valid_pain002(tmp_path / "logs", expected)
    finally:
        await drop_database(env_db)
        await drop_database(f"{env_db}_core")  # the reference core's own database


def _the_status_reports_are_valid_pain002(logs: Path, expected: dict[str, Any]) -> None:
    """One pain.002 per submitted file (one of each format), each valid against the official XSD, saying ACSC
    for every payment processed and RJCT for every row rejected at validation."""
    reports = {path.name.split("_")[1]: path.read_bytes() for path in logs.glob("bulk_*.pain.002.xml")}
    assert set(reports) == set(expected)
    for tenant, data in reports.items():
        version = "pain.002.001.03" if expected[tenant]["format"] == "pain.001.001.03" else "pain.002.001.10"
        assert xsd_errors(data, version) == []
        counts = read_pain002(data).per_status
        assert counts["ACSC"] == sum(v["count"] for v in expected[tenant]["processed_final"].values())
        assert counts["RJCT"] == expected[tenant]["rejected"]


def _the_reconciliation_report_matches(summary: Path, expected: dict[str, Any]) -> None:
    """The nightly report the demo ends with says exactly what happened, per tenant and currency."""
    with summary.open() as f:
        rows = list(csv.DictReader(f))
    assert {r["batch_state"] for r in rows} == {"RECONCILED"}
    for r in rows:
        spec = expected[r["tenant_id"]]
        processed = spec["processed_final"].get(r["currency"], {"count": 0, "amount_cents": 0})
        dead = spec["dead_lettered_closed"].get(r["currency"], {"count": 0, "amount_cents": 0})
        assert (int(r["processed_count"]), int(r["processed_cents"])) == (processed["count"], processed["amount_cents"])
        assert (int(r["dead_lettered_count"]), int(r["dead_lettered_cents"])) == (dead["count"], dead["amount_cents"])
        assert int(r["missing_count"]) == int(r["duplicate_count"]) == int(r["unexpected_count"]) == 0

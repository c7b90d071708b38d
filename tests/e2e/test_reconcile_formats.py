"""Issue 37, item 5, for `remit reconcile`: `--format json` and `--format csv` on stdout, parsed back and compared
with what PostgreSQL holds (the batch's totals per currency, the break its lying control totals make). The
table format off a terminal is tests/e2e/test_totals_break_visible.py's (COLUMNS=80, full values).

A database and vhost of its own; the batch accepted by remit's ingest; `remit reconcile` a real process (Spark
local), once exporting and once more on the same snapshot."""

import asyncio
import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from tests.utils.services import ROOT, OwnWorld
from tests.utils.world import fresh_tenant, payment_row, write_csv

pytestmark = pytest.mark.e2e


def reconcile(world: OwnWorld, out: Path, *args: str) -> tuple[int, str, str]:
    """`remit reconcile` with its stdout in a file (as cron runs it): exit code, the file's text, stderr."""
    stdout = out.parent / f"{out.name}.stdout"
    with stdout.open("wb") as sink:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "app.cli",
                "reconcile",
                "--as-of",
                "now",
                "--out",
                str(out),
                "--master",
                "local[1]",
                *args,
            ],
            env=world.service_env.env(),
            cwd=ROOT,
            stdout=sink,
            stderr=subprocess.PIPE,
            timeout=600,
        )
    return done.returncode, stdout.read_text(), done.stderr.decode()


async def owner_sql(world: OwnWorld, sql: str, *args: object) -> list[dict[str, object]]:
    conn = await asyncpg.connect(world.service_env.database_url.replace("+asyncpg", ""))
    try:
        return [dict(r) for r in await conn.fetch(sql, *args)]
    finally:
        await conn.close()


async def test_reconcile_prints_json_and_csv_that_match_the_database(own_world: OwnWorld, tmp_path: Path) -> None:
    uow = own_world.uow_factory
    tenant = await fresh_tenant(uow)
    rows = [payment_row(n, amount_cents=45_050, currency=c) for n, c in enumerate(("AUD", "JPY", "KWD", "AUD"))]
    accepted = await submit_batch(SubmitBatch(tenant, write_csv(tmp_path / "batch.csv", rows)), uow, own_world.settings)
    batch = accepted.correlation_id
    # A KWD total that lies: a break of the batch's own.
    lie = "UPDATE batch_totals SET control_count = 5 WHERE correlation_id = $1 AND currency = 'KWD'"
    await owner_sql(own_world, lie, batch)
    held = await owner_sql(
        own_world,
        "SELECT currency, accepted_count, accepted_cents FROM batch_totals WHERE correlation_id = $1 ORDER BY 1",
        batch,
    )
    assert [(r["currency"], r["accepted_count"], r["accepted_cents"]) for r in held] == [
        ("AUD", 2, 90_100),
        ("JPY", 1, 45_050),
        ("KWD", 1, 45_050),
    ]

    out = tmp_path / "recon"
    code, text, err = await asyncio.to_thread(reconcile, own_world, out, "--format", "json")
    assert code == 2, err[-3_000:]  # breaks found
    run = json.loads(text)  # stdout is the document alone: progress and notes are on stderr
    assert (run["result"], run["break_count"], run["batches_with_breaks"]) == ("BREAKS", 1, 1)
    assert "BREAKS: 4 messages, 1 breaks" in err
    summary = sorted((r for r in run["summary"] if r["correlation_id"] == batch), key=lambda r: r["currency"])
    assert [(r["tenant_id"], r["currency"], r["accepted_count"], r["accepted_cents"]) for r in summary] == [
        (tenant, r["currency"], r["accepted_count"], r["accepted_cents"]) for r in held
    ]
    assert [(r["currency"], r["totals_ok"], r["state"]) for r in summary] == [
        ("AUD", True, "PENDING"),
        ("JPY", True, "PENDING"),
        ("KWD", False, "BREAKS"),
    ]
    [broken] = run["breaks"]
    assert (broken["correlation_id"], broken["tenant_id"], broken["currency"], broken["status"]) == (
        batch,
        tenant,
        "KWD",
        "control_totals",
    )
    assert broken["amount_cents"] == 45_050  # exact, an integer of KWD's minor unit (fils)

    code, text, err = await asyncio.to_thread(
        reconcile, own_world, tmp_path / "again", "--snapshot", str(out / "snapshot"), "--format", "csv"
    )
    assert code == 2, err[-3_000:]
    records = list(csv.DictReader(io.StringIO(text, newline="")))
    assert {r["record"] for r in records} == {"summary", "break"}
    mine = sorted(
        (r for r in records if r["record"] == "summary" and r["correlation_id"] == batch), key=lambda r: r["currency"]
    )
    assert [(r["currency"], r["accepted_count"], r["accepted_cents"]) for r in mine] == [
        (r["currency"], str(r["accepted_count"]), str(r["accepted_cents"])) for r in held
    ]
    [row] = [r for r in records if r["record"] == "break"]
    assert (row["correlation_id"], row["currency"], row["status"], row["amount_cents"]) == (
        batch,
        "KWD",
        "control_totals",
        "45050",
    )
    with (out / "breaks.csv").open() as f:
        assert [r["detail"] for r in csv.DictReader(f)] == [row["detail"]]  # the report file says the same

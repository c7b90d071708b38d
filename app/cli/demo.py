"""`remit demo`: the whole flow on an isolated database and vhost, ending by itself.

1. consumer (with the core-banking simulator's rules: closed accounts, an outage, a flaky account),
   relay and archiver start as processes; both example files are submitted;
2. everything settles: processed, or dead-lettered (closed accounts at once, the outage's after retries);
3. the outage ends (the consumer restarts without it) and the operator replays `retries_exhausted`;
4. the final summary is checked against examples/EXPECTED.json: the exit code says whether it matched.
"""

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from sqlalchemy.engine import make_url

from app.bootstrap import uow_factory_for
from app.cli.common import console, friendly_errors, run
from app.cli.db import create_database_if_missing
from app.cli.status import summary_table
from app.messaging.connection import login_of
from app.messaging.management import Management
from app.publisher.accept import submit_batch
from app.publisher.commands import BatchAccepted, SubmitBatch
from app.reporting.batch_summary import SummaryRow, batch_summary
from app.settings import Settings, get_settings, owner_url
from app.storage.engine import make_engine
from app.storage.migrations import PROJECT_ROOT, upgrade_to_head
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.tenants import AddTenant, add_tenant
from contracts import wire_timestamp

EXAMPLES = PROJECT_ROOT / "examples"
TENANT_NAMES = {"anz": "ANZ Bank", "westpac": "Westpac"}


def expected() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((EXAMPLES / "EXPECTED.json").read_text())
    return loaded


def demo_settings(base: Settings, name: str) -> Settings:
    def on_demo_db(url: str) -> str:
        return make_url(url).set(database=name).render_as_string(hide_password=False)

    parts = urlsplit(base.amqp_url)
    amqp = urlunsplit((parts.scheme, parts.netloc, "/" + quote(name, safe=""), "", ""))
    return base.model_copy(
        update={
            "database_url": on_demo_db(base.database_url),
            "migration_database_url": on_demo_db(owner_url(base)),
            "amqp_url": amqp,
        }
    )


def simulator_env(outage: bool) -> dict[str, str]:
    rules = expected()["simulator"]
    flaky = dict.fromkeys(rules["flaky_accounts"], 1)
    if outage:
        flaky |= dict.fromkeys(rules["outage_accounts"], 1000)
    return {
        "REMIT_SIMULATOR_CLOSED_ACCOUNTS": json.dumps(rules["closed_accounts"]),
        "REMIT_SIMULATOR_FLAKY_ACCOUNTS": json.dumps(flaky),
        "REMIT_RETRY_DELAYS_SECONDS": "[0.5, 1, 2]",
    }


@dataclass
class DemoEnvironment:
    name: str
    settings: Settings
    logs: Path

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return {
            **os.environ,
            "REMIT_DATABASE_URL": self.settings.database_url,
            "REMIT_MIGRATION_DATABASE_URL": owner_url(self.settings),
            "REMIT_AMQP_URL": self.settings.amqp_url,
            "REMIT_LOG_LEVEL": "WARNING",
            **(extra or {}),
        }

    def start(self, args: list[str], log: str, extra: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
        out = (self.logs / log).open("ab")
        return subprocess.Popen(args, env=self.env(extra), cwd=PROJECT_ROOT, stdout=out, stderr=subprocess.STDOUT)

    def consumer(self, outage: bool, port: int) -> subprocess.Popen[bytes]:
        args = [sys.executable, "-m", "faststream", "run", "app.main:app", "--port", str(port)]
        return self.start(args, "consumer.log", simulator_env(outage))

    def remit(self, *args: str) -> int:
        """Run a `remit` command as an operator would, showing its output; return its exit code."""
        console.print(f"[bold]$ remit {' '.join(args)}[/]")
        command = [sys.executable, "-m", "app.cli", *args]
        return subprocess.run(command, env=self.env({"COLUMNS": "160"}), check=False).returncode


async def reset_database(settings: Settings, name: str) -> None:
    owner = owner_url(settings)
    admin = make_url(owner).set(database="postgres").render_as_string(hide_password=False)
    engine = make_engine(admin, 1)
    try:
        async with engine.connect() as conn:
            await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await engine.dispose()
    await create_database_if_missing(owner)
    await upgrade_to_head(owner)


async def submit_examples(uow: UnitOfWorkFactory, settings: Settings) -> list[BatchAccepted]:
    results = []
    for tenant, spec in expected()["tenants"].items():
        result = await submit_batch(SubmitBatch(tenant, EXAMPLES / spec["file"]), uow, settings)
        console.print(
            f"submitted {spec['file']} for {tenant}: batch {result.correlation_id}, "
            f"{result.accepted} accepted, {len(result.rejections)} rejected at validation"
        )
        results.append(result)
    return results


async def wait_until(
    uow: UnitOfWorkFactory, batches: list[str], label: str, target: int, timeout: float, processed_only: bool
) -> list[SummaryRow]:
    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(label, total=target)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            rows = await batch_summary(uow, batches)
            done = sum(r.processed + (0 if processed_only else r.dead_lettered) for r in rows)
            progress.update(task, completed=done)
            if done >= target or loop.time() > deadline:
                return rows
            await asyncio.sleep(0.25)


def totals(rows: list[SummaryRow], field: str) -> dict[str, dict[str, int]]:
    """Per tenant and currency, from the summary table: the same shape as EXPECTED.json."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        count, cents = getattr(r, field), getattr(r, f"{field}_cents")
        if count:
            out[f"{r.tenant_id}/{r.currency}"] = {"count": count, "amount_cents": cents}
    return out


def expected_totals(key: str) -> dict[str, dict[str, int]]:
    return {
        f"{tenant}/{currency}": value
        for tenant, spec in expected()["tenants"].items()
        for currency, value in spec[key].items()
    }


def merged(*keys: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for key in keys:
        for k, v in expected_totals(key).items():
            acc = out.setdefault(k, {"count": 0, "amount_cents": 0})
            acc["count"] += v["count"]
            acc["amount_cents"] += v["amount_cents"]
    return out


def report(title: str, ok: bool) -> bool:
    console.print(f"{'[green]✓' if ok else '[red]✗'} {title}[/]")
    return ok


def check(title: str, got: dict[str, dict[str, int]], want: dict[str, dict[str, int]]) -> bool:
    if not report(title, got == want):
        console.print({"expected": want, "got": got})
    return got == want


async def run_demo(name: str, timeout: float, logs: Path) -> bool:
    env = DemoEnvironment(name, demo_settings(get_settings(), name), logs)
    console.rule("remit demo")
    Management(env.settings.rabbitmq_management_url).reset_vhost(name, login_of(env.settings.amqp_url))
    await reset_database(env.settings, name)
    console.print(f"fresh database and RabbitMQ vhost [bold]{name}[/]; migrated to head")
    engine = make_engine(env.settings.database_url, pool_size=2)
    uow = uow_factory_for(engine)
    consumer = env.consumer(outage=True, port=0)
    others = [
        env.start([sys.executable, "-m", "app.cli", "relay"], "relay.log"),
        env.start([sys.executable, "-m", "faststream", "run", "app.deadletters.main:app"], "archiver.log"),
    ]
    try:
        for tenant, tenant_name in TENANT_NAMES.items():
            await add_tenant(AddTenant(tenant, tenant_name), uow)
        batches = [r.correlation_id for r in await submit_examples(uow, env.settings)]
        accepted = sum(s["accepted"] for s in expected()["tenants"].values())

        console.rule("1. during a core-banking outage for one creditor account")
        rows = await wait_until(uow, batches, "settling", accepted, timeout, processed_only=False)
        console.print(summary_table(rows))
        ok = check("processed as expected", totals(rows, "processed"), expected_totals("processed_during_outage"))
        ok &= check(
            "dead-lettered: closed accounts and the outage's payments",
            totals(rows, "dead_lettered"),
            merged("dead_lettered_closed", "dead_lettered_outage"),
        )
        env.remit("dlq", "stats")

        console.rule("2. the outage is over: replay what ran out of retries")
        consumer.terminate()
        consumer.wait(timeout=40)
        consumer = env.consumer(outage=False, port=0)
        env.remit("dlq", "replay", "--reason", "retries_exhausted", "--actor", "demo", "--why", "outage over")
        final = sum(v["count"] for v in expected_totals("processed_final").values())
        rows = await wait_until(uow, batches, "replaying", final, timeout, processed_only=True)
        console.print(summary_table(rows))
        ok &= check(
            "every payment processed exactly once", totals(rows, "processed"), expected_totals("processed_final")
        )
        ok &= check(
            "left for review: closed accounts", totals(rows, "dead_lettered"), expected_totals("dead_lettered_closed")
        )
        env.remit("dlq", "list")
        console.rule("3. the nightly reconciliation (PySpark), by correlation_id")
        as_of = wire_timestamp(datetime.now(UTC))
        code = env.remit("reconcile", "--as-of", as_of, "--out", str(logs / "reconciliation"))
        ok &= report(f"reconciliation: every batch RECONCILED (exit {code})", code == 0)
    finally:
        for process in (consumer, *others):
            process.terminate()
        for process in (consumer, *others):
            process.wait(timeout=40)
        await engine.dispose()
    console.print("[green]demo finished: everything matched[/]" if ok else f"[red]mismatch; logs in {logs}[/]")
    return ok


@friendly_errors
def demo(
    name: str = typer.Option("remit_demo", help="Database and vhost name (reset on every run)."),
    timeout: float = typer.Option(180, help="Seconds to wait for each phase before giving up."),
    logs: Path = typer.Option(Path(".demo-logs"), help="Where the service processes write their logs."),
) -> None:
    """Run the whole flow on an isolated database and vhost (reset each run): consumer, relay and
    archiver as processes, both example files submitted, an outage, dead letters, a replay, and a
    summary checked against examples/EXPECTED.json.

    Example: remit demo
    """
    logs.mkdir(parents=True, exist_ok=True)
    if not run(run_demo(name, timeout, logs)):
        raise typer.Exit(1)

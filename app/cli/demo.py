"""`remit demo`: the whole flow on an isolated database and vhost, ending by itself.

1. one example file of each format is submitted (remit's CSV and JSON Lines, ISO 20022 pain.001.001.09 and
   .03, ABA), each by its own tenant; the reference core banking starts as its own process with its own
   database (`<name>_core`) and the accounts those payments use (app/cli/demo_core.py), one of them closed;
   consumer (pointed at the core by REMIT_CORE_BANKING_URL), relay and archiver start as processes;
2. everything settles during an outage of one creditor account in the core (its fault injection holds its
   transfers, and a flaky account's once): processed, or dead-lettered (the closed account at once, refused by
   the core; the outage's after retries);
3. the outage ends and the operator replays `retries_exhausted`;
4. the core's journal is checked against what remit processed; the nightly reconciliation runs, and each
   batch's pain.002 status report is written and summed up;
5. the final summary is checked against examples/EXPECTED.json: the exit code says whether it matched.
"""

import asyncio
import json
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import typer
from pydantic import SecretStr
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from sqlalchemy.engine import make_url

from app.bankfiles import iso_status
from app.bootstrap import Ports, management_api
from app.cli.common import console, friendly_errors, run
from app.cli.db import create_database_if_missing
from app.cli.demo_core import DemoCore, fresh_core, load_accounts, outage_faults
from app.cli.listing import print_table
from app.cli.safe_console import line, styled
from app.cli.status import summary_table
from app.messaging.connection import login_of
from app.publisher.accept import submit_batch
from app.publisher.commands import BatchAccepted, SubmitBatch
from app.reporting.batch_summary import SummaryRow, batch_summary
from app.reporting.status_report import ReportChoice, write_batch_report
from app.resources import open_database, open_owner_engine
from app.settings import Settings, environment_for, get_settings, owner_url, system_url
from app.storage.migrations import PROJECT_ROOT, upgrade_to_head
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.tenants import AddTenant, add_tenant
from contracts import wire_timestamp

EXAMPLES = PROJECT_ROOT / "examples"
TENANT_NAMES = {
    "anz": "ANZ Bank",
    "westpac": "Westpac",
    "acme": "Acme Pty Ltd",
    "globex": "Globex Australia Pty Ltd",
    "initech": "Initech Pty Ltd",
}


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
            "system_database_url": on_demo_db(system_url(base)),
            "migration_database_url": on_demo_db(owner_url(base)),
            "amqp_url": amqp,
            "retry_delays_seconds": [0.5, 1, 2],
            "log_level": "WARNING",
        }
    )


@dataclass
class DemoEnvironment:
    name: str
    settings: Settings
    logs: Path

    def start(self, args: list[str], log: str) -> subprocess.Popen[bytes]:
        out = (self.logs / log).open("ab")
        env = environment_for(self.settings)
        return subprocess.Popen(args, env=env, cwd=PROJECT_ROOT, stdout=out, stderr=subprocess.STDOUT)

    def remit(self, *args: str) -> int:
        """Run a `remit` command as an operator would, showing its output; return its exit code."""
        console.print(styled(f"$ remit {' '.join(args)}", "bold"))
        command = [sys.executable, "-m", "app.cli", *args]
        env = {**environment_for(self.settings), "COLUMNS": "160"}
        return subprocess.run(command, env=env, check=False).returncode


async def reset_database(settings: Settings, name: str) -> None:
    async with open_owner_engine(settings, "postgres") as server, server.connect() as conn:
        await conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await create_database_if_missing(settings)
    await upgrade_to_head(owner_url(settings))


async def submit_examples(uow: UnitOfWorkFactory, settings: Settings) -> list[BatchAccepted]:
    results = []
    for tenant, spec in expected()["tenants"].items():
        result = await submit_batch(SubmitBatch(tenant, EXAMPLES / spec["file"]), uow, settings)
        console.print(
            f"submitted {spec['file']} ({result.source_format}) for {tenant}: batch {result.correlation_id}, "
            f"{result.accepted} accepted, {result.rejected_count} rejected at validation"
        )
        results.append(result)
    return results


async def wait_until(
    uow: UnitOfWorkFactory, batches: list[str], label: str, target: int, timeout: float, processed_only: bool
) -> list[SummaryRow]:
    columns = (TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
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
    console.print(styled(f"✓ {title}", "green") if ok else styled(f"✗ {title}", "red"))
    return ok


def check(title: str, got: dict[str, dict[str, int]], want: dict[str, dict[str, int]]) -> bool:
    if not report(title, got == want):
        console.print({"expected": want, "got": got})
    return got == want


async def status_reports(uow: UnitOfWorkFactory, submitted: list[BatchAccepted], folder: Path) -> bool:
    """Write each batch's pain.002 and check its counts: ACSC for every payment processed, RJCT for every row
    rejected at validation, PDNG for the closed accounts' payments (held for review: a replay could still pay)."""
    table = Table("tenant", "file", "report", "group", "ACSC", "PDNG", "RJCT", "RJCT reasons", title="pain.002 summary")
    ok = True
    for result in submitted:
        spec = expected()["tenants"][result.tenant_id]
        path = folder / f"{result.correlation_id}.pain.002.xml"
        with path.open("wb") as sink:
            written = await write_batch_report(
                uow, None, result.correlation_id, ReportChoice.PAIN_002, sink, datetime.now(UTC)
            )
        counts = written.header.status_counts()
        want = {
            "ACSC": sum(v["count"] for v in spec["processed_final"].values()),
            "PDNG": sum(v["count"] for v in spec["dead_lettered_closed"].values()),
            "RJCT": spec["rejected"],
        }
        ok &= {k: v for k, v in want.items() if v} == counts
        reasons: Counter[str] = Counter()
        for outcome, n in written.header.counts.items():
            reasons[iso_status(outcome).reason or ""] += n
        table.add_row(
            result.tenant_id,
            f"{spec['file']} ({result.source_format})",
            written.form.value,
            written.header.group_status,
            *(str(counts.get(status, 0)) for status in ("ACSC", "PDNG", "RJCT")),
            ", ".join(f"{code} {n}" for code, n in sorted(reasons.items()) if code),
        )
    console.print(table)
    console.print(f"status reports written to {folder}")
    return report("status reports: ACSC for every payment processed, RJCT for every rejected row", ok)


async def run_demo(name: str, timeout: float, logs: Path) -> bool:
    base = demo_settings(get_settings(), name)
    console.rule("remit demo")
    management_api(base, Ports()).reset_vhost(name, login_of(base.amqp_url))
    await reset_database(base, name)
    core = await fresh_core(base, name, logs)
    remit_at_core = {"core_banking_url": core.url, "core_banking_token": SecretStr(core.token)}
    env = DemoEnvironment(name, base.model_copy(update=remit_at_core), logs)
    console.print(line("fresh database and RabbitMQ vhost ", (name, "bold"), "; migrated to head"))
    console.print(line("the reference core banking: its own database ", (f"{name}_core", "bold"), f", at {core.url}"))
    try:
        async with open_database(env.settings, pool_size=2) as database:
            ok = await run_phases(env, core, database.uow, timeout, logs)
    finally:
        core.stop()
    finished = styled("demo finished: everything matched", "green")
    console.print(finished if ok else styled(f"mismatch; logs in {logs}", "red"))
    return ok


async def start_core(core: DemoCore, uow: UnitOfWorkFactory, logs: Path) -> None:
    """The core, with the accounts the submitted payments use, and the outage of one account."""
    spec = expected()["core_banking"]
    opened = await load_accounts(core, uow, spec["closed_accounts"], logs)
    core.start()
    await core.wait_ready()
    await core.set_faults(**outage_faults(spec))
    console.print(
        f"core banking up: {opened} accounts (creditor {', '.join(spec['closed_accounts'])} closed); fault "
        f"injection holds the transfers to {', '.join(spec['outage_accounts'])} (an outage) and, once, to "
        f"{', '.join(spec['flaky_accounts'])} (flaky)"
    )


async def run_phases(env: DemoEnvironment, core: DemoCore, uow: UnitOfWorkFactory, timeout: float, logs: Path) -> bool:
    """The service as processes, the files, the outage, the replay, the reconciliation; whether all matched."""
    for tenant, tenant_name in TENANT_NAMES.items():
        await add_tenant(AddTenant(tenant, tenant_name, default_ttl_seconds=env.settings.default_ttl_seconds), uow)
    submitted = await submit_examples(uow, env.settings)
    batches = [r.correlation_id for r in submitted]
    accepted = sum(s["accepted"] for s in expected()["tenants"].values())
    await start_core(core, uow, logs)
    consumer_args = [sys.executable, "-m", "faststream", "run", "app.main:app", "--port", "0"]
    processes = [
        env.start(consumer_args, "consumer.log"),
        env.start([sys.executable, "-m", "app.cli", "relay"], "relay.log"),
        env.start([sys.executable, "-m", "faststream", "run", "app.deadletters.archiver_app:app"], "archiver.log"),
    ]
    try:
        console.rule("1. during a core-banking outage for one creditor account")
        rows = await wait_until(uow, batches, "settling", accepted, timeout, processed_only=False)
        print_table(console, summary_table(rows))
        ok = check("processed as expected", totals(rows, "processed"), expected_totals("processed_during_outage"))
        ok &= check(
            "dead-lettered: closed accounts and the outage's payments",
            totals(rows, "dead_lettered"),
            merged("dead_lettered_closed", "dead_lettered_outage"),
        )
        env.remit("dlq", "stats")

        console.rule("2. the outage is over: replay what ran out of retries")
        await core.set_faults()
        env.remit("dlq", "replay", "--reason", "retries_exhausted", "--actor", "demo", "--why", "outage over")
        final = sum(v["count"] for v in expected_totals("processed_final").values())
        rows = await wait_until(uow, batches, "replaying", final, timeout, processed_only=True)
        print_table(console, summary_table(rows))
        ok &= check(
            "every payment processed exactly once", totals(rows, "processed"), expected_totals("processed_final")
        )
        ok &= check(
            "left for review: closed accounts", totals(rows, "dead_lettered"), expected_totals("dead_lettered_closed")
        )
        env.remit("dlq", "list")
        want = expected_totals("processed_final")
        ok &= check(
            "the core's journal: exactly one transfer per payment processed",
            await core.journal_matching(want, timeout),
            want,
        )
        console.rule("3. the nightly reconciliation (PySpark), by correlation_id")
        as_of = wire_timestamp(datetime.now(UTC))
        code = env.remit("reconcile", "--as-of", as_of, "--out", str(logs / "reconciliation"))
        ok &= report(f"reconciliation: every batch RECONCILED (exit {code})", code == 0)
        console.rule("4. status reports back to the customers (ISO 20022 pain.002)")
        ok &= await status_reports(uow, submitted, logs)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=40)
    return ok


@friendly_errors
def demo(
    name: str = typer.Option("remit_demo", help="Database and vhost name (reset on every run)."),
    timeout: float = typer.Option(180, help="Seconds to wait for each phase before giving up."),
    logs: Path = typer.Option(Path(".demo-logs"), help="Where the service processes write their logs."),
) -> None:
    """Run the whole flow on an isolated database and vhost (reset each run): the reference core banking
    (its own process and database, NAME_core), consumer, relay and archiver as processes, one example file
    of each format submitted (CSV, JSON Lines, pain.001 .09 and .03, ABA), an outage of one account in the
    core, dead letters, a replay, the core's journal, the reconciliation, the pain.002 status reports, and a
    summary checked against examples/EXPECTED.json.

    Example: remit demo
    """
    logs.mkdir(parents=True, exist_ok=True)
    if not run(run_demo(name, timeout, logs)):
        raise typer.Exit(1)

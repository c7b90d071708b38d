"""`remit demo`: the whole flow on an isolated database and vhost, ending by itself with a summary."""

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
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
from app.settings import Settings, get_settings
from app.storage.engine import make_engine
from app.storage.migrations import PROJECT_ROOT, upgrade_to_head
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.tenants import AddTenant, add_tenant

EXAMPLES = PROJECT_ROOT / "examples"
DEMO_NAME = "remit_demo"
TENANTS = {"anz": "ANZ Bank", "westpac": "Westpac"}


def demo_settings(base: Settings) -> Settings:
    url = make_url(base.database_url).set(database=DEMO_NAME).render_as_string(hide_password=False)
    parts = urlsplit(base.amqp_url)
    amqp = urlunsplit((parts.scheme, parts.netloc, "/" + quote(DEMO_NAME, safe=""), "", ""))
    return base.model_copy(update={"database_url": url, "amqp_url": amqp})


async def reset_database(settings: Settings) -> None:
    engine = make_engine(make_url(settings.database_url).set(database="postgres").render_as_string(False), 1)
    try:
        async with engine.connect() as conn:
            await conn.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{DEMO_NAME}" WITH (FORCE)')
    finally:
        await engine.dispose()
    await create_database_if_missing(settings.database_url)
    await upgrade_to_head(settings.database_url)


def start(args: list[str], settings: Settings, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "REMIT_DATABASE_URL": settings.database_url, "REMIT_AMQP_URL": settings.amqp_url}
    return subprocess.Popen(args, env=env, cwd=PROJECT_ROOT, stdout=log.open("wb"), stderr=subprocess.STDOUT)


async def submit_examples(uow: UnitOfWorkFactory, settings: Settings) -> list[BatchAccepted]:
    expected = json.loads((EXAMPLES / "EXPECTED.json").read_text())["tenants"]
    results = []
    for tenant, spec in expected.items():
        result = await submit_batch(SubmitBatch(tenant, EXAMPLES / spec["file"]), uow, settings)
        console.print(
            f"submitted {spec['file']} for {tenant}: batch {result.correlation_id}, "
            f"{result.accepted} accepted, {len(result.rejections)} rejected at validation"
        )
        results.append(result)
    return results


async def wait_for_processing(uow: UnitOfWorkFactory, batches: list[str], timeout: float) -> list[SummaryRow]:
    rows = await batch_summary(uow, batches)
    total = sum(r.accepted for r in rows)
    columns = (TextColumn("processing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("processing", total=total)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            rows = await batch_summary(uow, batches)
            settled = sum(r.processed + r.dead_lettered for r in rows)
            progress.update(task, completed=settled)
            if settled >= total:
                break
            await asyncio.sleep(0.25)
    return rows


async def run_demo(timeout: float, logs: Path) -> bool:
    settings = demo_settings(get_settings())
    console.rule("remit demo")
    Management(settings.rabbitmq_management_url).reset_vhost(DEMO_NAME, login_of(settings.amqp_url))
    await reset_database(settings)
    console.print(f"fresh database {DEMO_NAME} migrated; fresh RabbitMQ vhost {DEMO_NAME}")
    engine = make_engine(settings.database_url, pool_size=2)
    uow = uow_factory_for(engine)
    processes = [
        start([sys.executable, "-m", "faststream", "run", "app.main:app"], settings, logs / "consumer.log"),
        start([sys.executable, "-m", "app.cli", "relay"], settings, logs / "relay.log"),
    ]
    try:
        for tenant, name in TENANTS.items():
            await add_tenant(AddTenant(tenant, name), uow)
        results = await submit_examples(uow, settings)
        rows = await wait_for_processing(uow, [r.correlation_id for r in results], timeout)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=40)
        await engine.dispose()
    console.print(summary_table(rows))
    settled = all(r.in_flight == 0 for r in rows)
    console.print(
        "[green]every accepted payment processed exactly once[/]"
        if settled
        else f"[red]payments still in flight after {timeout}s; see the logs in {logs}[/]"
    )
    return settled


@friendly_errors
def demo(
    timeout: float = typer.Option(180, help="Seconds to wait for processing before giving up."),
    logs: Path = typer.Option(Path(".demo-logs"), help="Where the service processes write their logs."),
) -> None:
    """Run the whole flow on an isolated database and vhost (both named remit_demo, reset each run):
    start the consumer and the relay, submit examples/ for two tenants, wait, print the summary.

    Example: remit demo
    """
    logs.mkdir(parents=True, exist_ok=True)
    if not run(run_demo(timeout, logs)):
        raise typer.Exit(1)

"""Shared plumbing of the bench/ scripts: fresh database + vhost, payment bodies, pre-fill, machine details,
and a read-modify-write of one `## Section` of docs/benchmarks.md (other sections are left untouched).

Run the scripts from the project root: `.venv/bin/python bench/consumer_bench.py --help`.
"""

import asyncio
import contextlib
import fcntl
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import metadata
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the scripts run as `python bench/x.py`; make app/, contracts/, tests/ importable
    sys.path.insert(0, str(ROOT))

import aio_pika  # noqa: E402
import aiormq  # noqa: E402
import asyncpg  # noqa: E402
import httpx  # noqa: E402
import psutil  # noqa: E402
import uuid6  # noqa: E402
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn  # noqa: E402

from app.messaging.properties import OutboundPayment, amqp_message  # noqa: E402
from app.messaging.topology import Topology, declare_topology, routing_key  # noqa: E402
from app.tenancy.routing import Route, apply_route  # noqa: E402

BENCH_TIER = "enterprise"  # the biggest pool (10 workers): the bench measures the consumer, not a small tier
from app.settings import Settings  # noqa: E402
from app.storage.migrations import upgrade_to_head  # noqa: E402
from contracts import wire_timestamp  # noqa: E402
from tests.utils.factories import make_wire_dict  # noqa: E402
from tests.utils.services import (  # noqa: E402
    AMQP_BASE,
    MANAGEMENT_AUTH,
    MANAGEMENT_URL,
    PG_ADMIN_DSN,
    amqp_url,
    free_port,
)

DOC = ROOT / "docs" / "benchmarks.md"
LOCK = Path("/tmp/remit-docs-benchmarks.md.lock")
TENANT = "bench"
CORRELATION_ID = "bulk_bench_20261121_batch_0001"
PG_PLAIN = "postgresql://root@127.0.0.1:5432/{name}"


# ---------------------------------------------------------------- environment


@dataclass(frozen=True)
class BenchEnv:
    database: str  # database name
    vhost: str

    @property
    def sqlalchemy_url(self) -> str:
        return f"postgresql+asyncpg://root@127.0.0.1:5432/{self.database}"

    @property
    def dsn(self) -> str:
        return PG_PLAIN.format(name=self.database)

    @property
    def amqp_url(self) -> str:
        return amqp_url(self.vhost)

    def settings(self, **overrides: Any) -> Settings:
        return Settings(database_url=self.sqlalchemy_url, amqp_url=self.amqp_url, **overrides)

    def service_env(self, **overrides: str) -> dict[str, str]:
        return {
            **os.environ,
            "REMIT_DATABASE_URL": self.sqlalchemy_url,
            "REMIT_AMQP_URL": self.amqp_url,
            "REMIT_LOG_LEVEL": "WARNING",
            "PYTHONPATH": str(ROOT),
            **overrides,
        }


@contextlib.asynccontextmanager
async def fresh_env(prefix: str, keep: bool = False) -> AsyncIterator[BenchEnv]:
    """A new PostgreSQL database (migrated to head, with the bench tenant and batch) and a new vhost."""
    name = f"remit_bench_{prefix}_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(PG_ADMIN_DSN)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    async with httpx.AsyncClient(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH, timeout=30) as client:
        (await client.put(f"/api/vhosts/{name}")).raise_for_status()
        perms = {"configure": ".*", "write": ".*", "read": ".*"}
        (await client.put(f"/api/permissions/{name}/guest", json=perms)).raise_for_status()
    env = BenchEnv(name, name)
    try:
        await upgrade_to_head(env.sqlalchemy_url)
        conn = await asyncpg.connect(env.dsn)
        try:
            await conn.execute(
                "INSERT INTO tenants (tenant_id, name, tier) VALUES ($1, 'bench tenant', $2)", TENANT, BENCH_TIER
            )
            await conn.execute(
                "INSERT INTO batches (correlation_id, tenant_id, source_name, source_sha256, accepted_count,"
                " rejected_count) VALUES ($1, $2, 'bench', $3, 0, 0)",
                CORRELATION_ID,
                TENANT,
                uuid.uuid4().hex * 2,
            )
        finally:
            await conn.close()
        yield env
    finally:
        if not keep:
            async with httpx.AsyncClient(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH, timeout=60) as client:
                await client.delete(f"/api/vhosts/{name}")
            admin = await asyncpg.connect(PG_ADMIN_DSN)
            try:
                await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            finally:
                await admin.close()


REMIT_SERVICE = [sys.executable, "-m", "faststream", "run", "app.main:app"]


def remit_consumer(workers: int = 1) -> tuple[list[str], int]:
    """The command that starts remit's consumer service, and the free port its HTTP side (/metrics, /readyz)
    listens on: never uvicorn's default 8000, so a bench runs beside anything else on the machine."""
    port = free_port()
    command = [*REMIT_SERVICE, "--port", str(port)]
    return ([*command, "--workers", str(workers)] if workers > 1 else command), port


async def declare(env: BenchEnv) -> Topology:
    """Declare remit's own topology (payments exchange, quorum work queue, ...) in the vhost."""
    topology = Topology.from_settings(env.settings())
    connection = await aio_pika.connect(env.amqp_url)
    try:
        await declare_topology(await connection.channel(), topology)
        await apply_route(connection, topology, Route(TENANT, BENCH_TIER, dedicated=False))
    finally:
        await connection.close()
    return topology


def work_queue(topology: Topology) -> str:
    """The queue the bench tenant's payments land in: its tier's shared work queue."""
    return topology.tier_queue(BENCH_TIER)


async def purge(env: BenchEnv, queue: str) -> None:
    connection = await aio_pika.connect(env.amqp_url)
    try:
        channel = await connection.channel()
        q = await channel.get_queue(queue, ensure=True)
        await q.purge()
    finally:
        await connection.close()


async def renew_queue(env: BenchEnv, topology: Topology) -> None:
    """Delete the work queue and declare remit's topology again: a drain then reads a new quorum queue, whatever
    the drains before it left in the old one's log (docs/benchmarks.md, "Consumer, 2 processes")."""
    connection = await aio_pika.connect(env.amqp_url)
    try:
        await (await connection.channel()).queue_delete(work_queue(topology))
    finally:
        await connection.close()
    await declare(env)


async def truncate_effects(env: BenchEnv) -> None:
    conn = await asyncpg.connect(env.dsn)
    try:
        await conn.execute("TRUNCATE processed_messages, ledger, delivery_attempts RESTART IDENTITY")
    finally:
        await conn.close()


async def scalar(dsn: str, sql: str) -> Any:
    conn = await asyncpg.connect(dsn)
    try:
        return await conn.fetchval(sql)
    finally:
        await conn.close()


# ---------------------------------------------------------------- payments


@dataclass(frozen=True, slots=True)
class Payment:
    message_id: uuid.UUID
    reference: str
    body: bytes


def make_payments(n: int, timestamp: datetime | None = None) -> list[Payment]:
    """n real wire bodies (the ~480-byte payment JSON of make_wire_dict) with fresh UUIDv7 ids."""
    template = make_wire_dict(tenant_id=TENANT, correlation_id=CORRELATION_ID)
    if timestamp is not None:
        template["timestamp_utc"] = wire_timestamp(timestamp)
    out = []
    for i in range(n):
        message_id = uuid.UUID(int=uuid6.uuid7().int)
        reference = f"PAY-BENCH-{i:012d}-{message_id.hex[-8:]}"
        wire = {**template, "message_id": str(message_id), "payment_reference": reference}
        out.append(Payment(message_id, reference, json.dumps(wire, separators=(",", ":")).encode()))
    return out


def outbound(p: Payment, timestamp: datetime) -> OutboundPayment:
    return OutboundPayment(
        message_id=p.message_id,
        correlation_id=CORRELATION_ID,
        tenant_id=TENANT,
        timestamp=timestamp,
        expires_at=timestamp + timedelta(days=1),
        body=p.body,
    )


def message_for(p: Payment, now: datetime) -> aio_pika.Message:
    """The AMQP message exactly as remit's relay builds it (properties, persistent, tenant header)."""
    return amqp_message(outbound(p, now), now, "guest")


async def confirmed_publish(
    url: str,
    payments: Sequence[Payment],
    in_flight: int = 1000,
    on_progress: Callable[[int], None] = lambda n: None,
    queued: bool = False,
) -> float:
    """Publish persistent messages with confirms, `in_flight` unconfirmed at most; return msg/s.

    `queued`: through the underlying aiormq channel with `wait=False` (frames queued back to back, not each
    drained to the socket before the next publish starts), the primitive remit's relay publishes with."""
    connection = await aio_pika.connect(url)
    try:
        channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        exchange = await channel.get_exchange("payments", ensure=True)
        underlay = cast(aiormq.Channel, await channel.get_underlay_channel())
        key = routing_key(TENANT)
        now = datetime.now(UTC)
        messages = [message_for(p, now) for p in payments]
        window = asyncio.Semaphore(in_flight)
        done = 0

        async def one(message: aio_pika.Message) -> None:
            nonlocal done
            try:
                if queued:
                    await underlay.basic_publish(
                        message.body,
                        exchange="payments",
                        routing_key=key,
                        properties=message.properties,
                        mandatory=True,
                        wait=False,
                    )
                else:
                    await exchange.publish(message, routing_key=key, mandatory=True)
            finally:
                window.release()
            done += 1
            if done % 1000 == 0:
                on_progress(1000)

        tasks = []
        start = time.perf_counter()
        for message in messages:
            await window.acquire()
            tasks.append(asyncio.create_task(one(message)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
        on_progress(done % 1000)
        return len(messages) / elapsed
    finally:
        await connection.close()


def progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=False,
    )


# ---------------------------------------------------------------- reporting


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def fmt_runs(values: Sequence[float], unit: str = "") -> str:
    return ", ".join(f"{v:,.0f}{unit}" for v in values)


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "?"


def _server_versions() -> str:
    rabbit = "?"
    with contextlib.suppress(httpx.HTTPError, ValueError):
        overview = httpx.get(f"{MANAGEMENT_URL}/api/overview", auth=MANAGEMENT_AUTH, timeout=5).json()
        rabbit = str(overview.get("rabbitmq_version", "?"))
    pg = "?"
    with contextlib.suppress(Exception), ThreadPoolExecutor(1) as pool:
        # On a thread of its own: a bench that asks from inside its event loop cannot asyncio.run here.
        pg = str(pool.submit(lambda: asyncio.run(scalar(PG_ADMIN_DSN, "SHOW server_version"))).result(10)).split()[0]
    return f"RabbitMQ {rabbit}, PostgreSQL {pg}"


def _git_state() -> str:
    """The commit measured, and whether app/ had uncommitted changes (read-only git calls)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "app"], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return "git unavailable"
    changed = len(dirty.stdout.splitlines())
    return f"commit {head.stdout.strip() or '?'}" + (
        f" with {changed} uncommitted change(s) in app/" if changed else ""
    )


def machine_details(servers: str | None = None) -> str:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    memory_gib = psutil.virtual_memory().total / 2**30
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    packages = ", ".join(
        f"{p} {_version(p)}" for p in ("faststream", "aio-pika", "aiormq", "sqlalchemy", "asyncpg", "pydantic")
    )
    return (
        f"Code: {_git_state()}.  \n"
        f"Machine: {os.cpu_count()} CPUs ({cpu}), {memory_gib:.1f} GiB RAM, {platform.platform()}; "
        f"load average before the run {load}.  \n"
        f"Software: Python {platform.python_version()}, {packages}; {servers or _server_versions()}.  \n"
        f"Run: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, broker {AMQP_BASE.rsplit('@', 1)[-1]}."
    )


def with_notes(text: str, name: str) -> str:
    """Append bench/<name>_notes.md (hand-written findings that explain the numbers) when it exists."""
    notes = Path(__file__).with_name(f"{name}_notes.md")
    return text + "\n" + notes.read_text() if notes.exists() else text


def write_section(heading: str, body: str) -> None:
    """Replace `## heading` (up to the next `## `) in docs/benchmarks.md, or append it; other sections stay.

    The read-modify-write is done under an flock on a side file and written with an atomic rename, so two
    bench scripts (or the reconciliation helper, if it takes the same lock) never clobber each other.
    """
    DOC.parent.mkdir(parents=True, exist_ok=True)
    section = f"## {heading}\n\n{body.strip()}\n\n"
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        text = DOC.read_text() if DOC.exists() else "# Benchmarks\n\n"
        pattern = re.compile(rf"^## {re.escape(heading)}[ \t]*\n.*?(?=^## |\Z)", re.MULTILINE | re.DOTALL)
        if pattern.search(text):
            text = pattern.sub(lambda _: section, text, count=1)
        else:
            text = text.rstrip("\n") + "\n\n" + section
        tmp = DOC.with_suffix(".md.tmp")
        tmp.write_text(text.rstrip("\n") + "\n")
        os.replace(tmp, DOC)

"""A tenant publishing directly over AMQP, exactly as the README shows, is a first-class payment: `remit status`
counts it and the nightly reconciliation of a clean day of direct publishing exits 0 (issue 17, item 1).

A fresh database and vhost; `remit tenants add`, the consumer and `remit reconcile` as real processes; the
publisher a plain aio-pika client with the credentials `remit tenants add` printed."""

import asyncio
import csv
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

import aio_pika
import asyncpg
import pytest

from app.storage.migrations import upgrade_to_head
from contracts.amounts import amount_cell
from tests.utils.factories import make_wire_dict, new_tenant_id, to_wire_bytes
from tests.utils.services import ROOT, ServiceEnv, ServiceProcess, create_database, drop_database, eventually

pytestmark = pytest.mark.e2e


@pytest.fixture
async def fresh_env(vhost: str) -> AsyncIterator[ServiceEnv]:
    url = await create_database()
    await upgrade_to_head(url)
    yield ServiceEnv(database_url=url, vhost=vhost)
    await drop_database(url)


def remit(env: ServiceEnv, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        env=env.env(COLUMNS="250"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


async def publish_as_the_readme_shows(env: ServiceEnv, user: str, password: str, tenant: str, body: bytes,
                                      message_id: str) -> None:  # fmt: skip
    vhost = quote(env.vhost, safe="")
    connection = await aio_pika.connect(f"amqp://{quote(user, safe='')}:{password}@127.0.0.1/{vhost}")
    async with connection:
        channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        exchange = await channel.get_exchange("payments", ensure=False)
        await exchange.publish(
            aio_pika.Message(
                body,
                content_type="application/json",
                message_id=message_id,
                user_id=user,
                headers={"tenantUUID": tenant},
                delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            ),
            routing_key=f"{tenant}.payment",
        )


async def direct_records(database_url: str, tenant: str) -> int:
    conn = await asyncpg.connect(database_url.replace("+asyncpg", ""))
    try:
        query = "SELECT count(*) FROM processed_messages WHERE tenant_id = $1 AND source = 'amqp'"
        return int(await conn.fetchval(query, tenant))
    finally:
        await conn.close()


async def test_a_clean_day_of_direct_publishing_shows_in_status_and_reconciles(
    fresh_env: ServiceEnv, logs_dir: Path, tmp_path: Path
) -> None:
    tenant = new_tenant_id()
    added = remit(fresh_env, "tenants", "add", tenant, "--name", tenant)
    assert added.returncode == 0, added.stdout + added.stderr
    login = re.search(r"user (\S+) password (\S+)", added.stdout)
    assert login is not None, added.stdout
    user, password = login.groups()
    batch = f"direct_{tenant}_0001"
    amounts = [12_345, 700, 88_000]

    consumer = ServiceProcess.consumer(fresh_env.env(), logs_dir / "consumer.log")
    try:
        for amount in amounts:
            wire = make_wire_dict(tenant_id=tenant, correlation_id=batch, amount_cents=amount)
            body, message_id = to_wire_bytes(wire), wire["message_id"]
            await publish_as_the_readme_shows(fresh_env, user, password, tenant, body, message_id)

        async def booked() -> bool:
            return await direct_records(fresh_env.database_url, tenant) == len(amounts)

        await eventually(booked, timeout=60)
    finally:
        consumer.stop()

    for args in (("--batch", batch), ("--tenant", tenant)):  # named, and found among the tenant's latest
        status = remit(fresh_env, "status", *args)
        assert status.returncode == 0, status.stderr
        row = next(line for line in status.stdout.splitlines() if batch in line)
        cells = [c.strip() for c in re.split(r"[│┃|]", row) if c.strip()]
        total = amount_cell(sum(amounts), "AUD")  # '123.45 (12,345)'
        # tenant, batch, cur, accepted, amount, rejected, processed, amount, dead-lettered, in flight, over amqp
        assert cells == [tenant, batch, "AUD", "3", total, "0", "3", total, "0", "0", "3"], status.stdout

    out = tmp_path / "recon"
    reconciled = await asyncio.to_thread(
        remit, fresh_env, "reconcile", "--as-of", "now", "--out", str(out), "--master", "local[1]", timeout=600
    )
    assert reconciled.returncode == 0, reconciled.stdout + reconciled.stderr
    assert "RECONCILED" in reconciled.stdout
    with (out / "summary.csv").open() as f:
        [summary] = [r for r in csv.DictReader(f) if r["correlation_id"] == batch]
    assert (summary["accepted_count"], summary["amqp_count"], summary["processed_count"]) == ("3", "3", "3")
    assert (summary["unexpected_count"], summary["state"]) == ("0", "RECONCILED")

"""Factories that touch the real services: tenants, bulk files, direct publishes, ledger reads."""

import asyncio
import csv
import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import aio_pika
from aio_pika.abc import AbstractChannel
from sqlalchemy import func, select

from app.messaging import headers
from app.messaging.properties import CONTENT_TYPE
from app.messaging.topology import Topology
from app.settings import Settings
from app.storage.tables import delivery_attempts, ledger, outbox, processed_messages
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.routing import Route, apply_route
from app.tenancy.tenants import AddTenant, add_tenant
from tests.utils.factories import new_payment_reference, new_tenant_id, to_wire_bytes

COLUMNS = [
    "payment_reference",
    "amount_cents",
    "currency",
    "debtor_bsb",
    "debtor_account",
    "creditor_bsb",
    "creditor_account",
]


class Routing:
    """The AMQP URL of the running test's vhost (set by the `settings` fixture), so that a tenant made
    for a test is routed there at once, as `remit tenants add` does."""

    amqp_url: str | None = None


async def fresh_tenant(uow: UnitOfWorkFactory, ttl: int = 86_400, tier: str = "basic") -> str:
    tenant_id = new_tenant_id()
    await add_tenant(AddTenant(tenant_id, f"Tenant {tenant_id}", tier=tier, default_ttl_seconds=ttl), uow)
    if Routing.amqp_url is not None:
        await route_tenant(Routing.amqp_url, tenant_id, tier)
    return tenant_id


async def route_tenant(amqp_url: str, tenant_id: str, tier: str, dedicated: bool = False) -> str:
    connection = await aio_pika.connect(amqp_url)
    try:
        return await apply_route(connection, Topology.from_settings(Settings()), Route(tenant_id, tier, dedicated))
    finally:
        await connection.close()


def payment_row(n: int = 0, **overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "payment_reference": new_payment_reference(),
        "amount_cents": 1000 + n,
        "currency": "AUD",
        "debtor_bsb": "012-345",
        "debtor_account": f"{100000000 + n}",
        "creditor_bsb": "033-001",
        "creditor_account": f"{900000000 + n}",
    }
    return {**row, **overrides}


def write_csv(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


async def publish_raw(
    amqp_url: str,
    body: bytes,
    routing_key: str,
    *,
    tenant_header: str | None,
    message_id: str | None = None,
    content_type: str | None = CONTENT_TYPE,
    exchange: str = "payments",
    user_id: str | None = "guest",
) -> None:
    connection = await aio_pika.connect(amqp_url)
    try:
        channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        target = await channel.get_exchange(exchange)
        message_headers: dict[str, aio_pika.abc.FieldValue] = {}
        if tenant_header is not None:
            message_headers[headers.TENANT] = tenant_header
        await target.publish(
            aio_pika.Message(
                body,
                content_type=content_type,
                delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                message_id=message_id,
                headers=message_headers,
                user_id=user_id,
            ),
            routing_key=routing_key,
        )
    finally:
        await connection.close()


async def ledger_count(uow: UnitOfWorkFactory, message_id: UUID | str) -> int:
    return await _count(uow, select(func.count()).where(ledger.c.message_id == message_id))


def booked_once(uow: UnitOfWorkFactory, message_id: UUID | str) -> Callable[[], Awaitable[bool]]:
    """A check for `eventually`: the message has exactly one ledger row."""

    async def check() -> bool:
        return await ledger_count(uow, message_id) == 1

    return check


async def ledger_rows_for_tenant(uow: UnitOfWorkFactory, tenant_id: str) -> list[Any]:
    async with uow() as u:
        query = select(ledger).where(ledger.c.tenant_id == tenant_id).order_by(ledger.c.transfer_id)
        return list((await u.connection.execute(query)).all())


async def processed_count(uow: UnitOfWorkFactory, message_id: UUID) -> int:
    return await _count(uow, select(func.count()).where(processed_messages.c.message_id == message_id))


async def attempts_for(uow: UnitOfWorkFactory, message_id: UUID) -> list[Any]:
    async with uow() as u:
        query = select(delivery_attempts).where(delivery_attempts.c.message_id == message_id)
        return list((await u.connection.execute(query.order_by(delivery_attempts.c.attempt_id))).all())


async def outbox_rows(uow: UnitOfWorkFactory, correlation_id: str) -> list[Any]:
    async with uow() as u:
        query = select(outbox).where(outbox.c.correlation_id == correlation_id).order_by(outbox.c.seq)
        return list((await u.connection.execute(query)).all())


async def _count(uow: UnitOfWorkFactory, query: Any) -> int:
    async with uow() as u:
        return int((await u.connection.execute(query)).scalar_one())


async def send_payment(settings: Settings, wire: dict[str, Any], tenant_header: str | None = None) -> None:
    """Publish a wire message on its tenant's routing key as the trusted service login would."""
    tenant = wire["tenant_id"]
    await publish_raw(
        settings.amqp_url,
        to_wire_bytes(wire),
        f"{tenant}.payment",
        tenant_header=tenant_header or tenant,
        message_id=wire["message_id"],
    )


async def dead_letters(channel: AbstractChannel, settings: Settings, n: int, timeout: float = 30) -> list[Any]:
    """Take exactly n messages off the dead-letter queue, waiting up to `timeout` seconds for them."""
    queue = await channel.get_queue(settings.dead_letter_queue)
    found: list[Any] = []
    deadline = asyncio.get_running_loop().time() + timeout
    while len(found) < n:
        message = await queue.get(no_ack=True, fail=False)
        if message is not None:
            found.append(message)
        elif asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{len(found)} of {n} dead letters arrived within {timeout}s")
        else:
            await asyncio.sleep(0.1)
    return found

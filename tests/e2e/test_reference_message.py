"""The message design's own example (reference/004), published by a plain aio-pika client as a tenant's own
RabbitMQ user, is booked under the default settings: its `validation_result.checks` ("customer_exists",
"bsb_valid", "limit_ok") are the publisher's claim, recorded with the message, and what protects the ledger is
the consumer's own rules.

Before (issue 37, item 6): dead-lettered `invalid` with `validation_result.checks lacks the required check(s)
currency_active, debtor_differs_from_creditor, format_valid, reference_unique`, so an upstream Service A
written to that contract had every payment dead-lettered."""

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import aio_pika
import pytest
from sqlalchemy import select

from app.storage.tables import dead_letters, ledger, processed_messages
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.factories import new_correlation_id, new_payment_reference
from tests.utils.services import ServiceProcess, eventually
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import fresh_tenant

pytestmark = pytest.mark.e2e


def reference_004(tenant: str) -> dict[str, Any]:
    """reference/004_7821ab28fff9153c.txt's "Broker Payload" example, field for field, with fresh ids: a UUID
    message_id (the contract's), a fresh batch and reference, now as its time (the example's 2025 moment is past
    its 24 h TTL) and the tenant the contract's envelope carries."""
    return {
        "message_id": str(uuid.uuid4()),
        "timestamp_utc": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "correlation_id": new_correlation_id(),
        "tenant_id": tenant,
        "payment_reference": new_payment_reference(),
        "amount_cents": 150000,
        "currency": "AUD",
        "debtor_bsb": "012-345",
        "debtor_account": "123456789",
        "creditor_bsb": "033-001",
        "creditor_account": "987654321",
        "validation_result": {"passed": True, "checks": ["customer_exists", "bsb_valid", "limit_ok"]},
        "retry_count": 0,
        "ttl_seconds": 86400,
    }


async def test_the_reference_message_is_booked_under_the_default_settings(
    uow_factory: UnitOfWorkFactory, consumer: ServiceProcess, tenant_users: TenantUsers
) -> None:
    await consumer.ready()
    tenant = await fresh_tenant(uow_factory)
    publisher = tenant_users.publisher(tenant)  # the tenant's own RabbitMQ user, as `remit tenants add` makes it
    wire = reference_004(tenant)
    async with await aio_pika.connect(publisher.url) as connection:
        channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        exchange = await channel.get_exchange("payments", ensure=False)
        await exchange.publish(
            aio_pika.Message(
                json.dumps(wire).encode(),
                content_type="application/json",
                message_id=wire["message_id"],
                correlation_id=wire["correlation_id"],
                timestamp=datetime.now(UTC),
                user_id=publisher.user,
                headers={"tenantUUID": tenant},
                delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            ),
            routing_key=f"{tenant}.payment",
        )

    async def booked() -> bool:
        async with uow_factory(tenant) as uow:
            rows = (await uow.connection.execute(select(ledger).where(ledger.c.tenant_id == tenant))).all()
        return len(rows) == 1

    await eventually(booked, timeout=60)
    async with uow_factory(tenant) as uow:
        conn = uow.connection
        [row] = (await conn.execute(select(ledger).where(ledger.c.tenant_id == tenant))).all()
        records = select(processed_messages).where(processed_messages.c.tenant_id == tenant)
        [record] = (await conn.execute(records)).all()
        dead = (await conn.execute(select(dead_letters).where(dead_letters.c.tenant_id == tenant))).all()
    assert (str(row.message_id), row.payment_reference, row.amount_cents) == (
        wire["message_id"],
        wire["payment_reference"],
        150000,
    )
    assert (record.source, record.amount_cents, record.currency) == ("amqp", 150000, "AUD")
    assert dead == []

"""A poison row: one payment that PostgreSQL refuses must not fail its tenant's whole group commit.

The real way found: a payment booked long ago whose idempotency record retention has since purged (the
ledger keeps the money for good). A copy of it claims a fresh idempotency record, then its ledger row
violates the ledger's unique key. Any tenant can send such a copy of its own old payment directly.
"""

import asyncio
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import aio_pika
import pytest
from aio_pika.abc import AbstractChannel
from sqlalchemy import delete, select

from app.consumer.committer import Outcome
from app.errors import CommitFailed, MessageFailure
from app.messaging import headers
from app.messaging.properties import CONTENT_TYPE
from app.settings import Settings
from app.storage.tables import delivery_attempts, processed_messages
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.committer import running_committer
from tests.utils.factories import make_message, make_wire_dict, to_wire_bytes
from tests.utils.services import ServiceEnv, ServiceProcess, eventually, free_port
from tests.utils.tenant_users import TenantPublisher, TenantUsers
from tests.utils.world import dead_letters, fresh_tenant, ledger_rows_for_tenant

pytestmark = pytest.mark.integration

GROUP = 200
POISON_AT = 100


def _accounts(n: int) -> dict[str, str]:
    """Distinct, recognisable account numbers per payment, to look for in every error afterwards."""
    return {"debtor_account": f"7{n:08d}", "creditor_account": f"8{n:08d}"}


ALL_ACCOUNTS = [a for n in range(GROUP) for a in _accounts(n).values()]


async def _purge_claim(uow: UnitOfWorkFactory, tenant: str, message_id: Any) -> None:
    """What retention does once the record is older than the tenant's retention days."""
    async with uow() as u:
        where = (processed_messages.c.tenant_id == tenant) & (processed_messages.c.message_id == UUID(str(message_id)))
        await u.connection.execute(delete(processed_messages).where(where))
        await u.commit()


async def _publish_all(publisher: TenantPublisher, wires: Sequence[dict[str, Any]]) -> None:
    """As the tenant's own RabbitMQ user, on one connection (a connection per message takes too long)."""
    connection = await aio_pika.connect(publisher.url)
    try:
        channel = await connection.channel(publisher_confirms=True, on_return_raises=True)
        exchange = await channel.get_exchange("payments", ensure=False)
        for wire in wires:
            message = aio_pika.Message(
                to_wire_bytes(wire),
                content_type=CONTENT_TYPE,
                message_id=wire["message_id"],
                user_id=publisher.user,
                headers={headers.TENANT: publisher.tenant},
                delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            )
            await exchange.publish(message, routing_key=f"{publisher.tenant}.payment")
    finally:
        await connection.close()


async def _booked(uow: UnitOfWorkFactory, tenant: str) -> int:
    return len(await ledger_rows_for_tenant(uow, tenant))


async def _no_more_dead_letters(channel: AbstractChannel, settings: Settings) -> bool:
    queue = await channel.get_queue(settings.dead_letter_queue)
    return await queue.get(no_ack=True, fail=False) is None


def _leaked(text: str) -> list[str]:
    return [a for a in ALL_ACCOUNTS if a in text]


async def test_a_poison_row_in_a_group_commit_of_200_is_dead_lettered_alone(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    service_env: ServiceEnv,
    logs_dir: Path,
    tenant_users: TenantUsers,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    publisher = tenant_users.publisher(tenant)
    wires = [make_wire_dict(tenant_id=tenant, amount_cents=1000 + n, **_accounts(n)) for n in range(GROUP)]
    old = wires[POISON_AT]
    log_path = logs_dir / "consumer.log"

    first = ServiceProcess.consumer(service_env.env(), log_path)
    try:
        await _publish_all(publisher, [old])

        async def old_booked() -> bool:
            return await _booked(uow_factory, tenant) == 1

        await eventually(old_booked)
    finally:
        first.stop()
    await _purge_claim(uow_factory, tenant, old["message_id"])

    # The copy of the old payment waits in the queue among 199 new ones, before the consumer starts.
    await _publish_all(publisher, wires)
    consumer = ServiceProcess.consumer(service_env.env(), log_path)
    try:
        [dead] = await dead_letters(channel, settings, 1, timeout=60)

        async def all_booked() -> bool:
            return await _booked(uow_factory, tenant) == GROUP

        await eventually(all_booked)
        await asyncio.sleep(1.0)  # room for a wrong retry or a second dead letter to show up
    finally:
        consumer.stop()

    assert dead.message_id == old["message_id"]
    assert dead.headers[headers.REASON] == "invalid"
    error = str(dead.headers[headers.ERROR_MESSAGE])
    assert re.search(r"SQLSTATE 23505.*uq_ledger_tenant_id_message_id", error), error
    assert _leaked(error) == []
    assert await _no_more_dead_letters(channel, settings)

    async with uow_factory() as u:
        attempts = (
            await u.connection.execute(select(delivery_attempts).where(delivery_attempts.c.tenant_id == tenant))
        ).all()
        claims = (
            await u.connection.execute(
                select(processed_messages.c.attempt).where(processed_messages.c.tenant_id == tenant)
            )
        ).scalars()
        claimed_attempts = sorted(claims)
    # Only the poison row spent an attempt; the 199 others were booked at their first delivery.
    assert [(str(a.message_id), a.outcome) for a in attempts] == [(old["message_id"], "dead_lettered")]
    assert _leaked(attempts[0].error_message) == []
    assert claimed_attempts == [1] * (GROUP - 1)
    log = (logs_dir / "consumer.log").read_text(errors="replace")
    assert old["message_id"] in log  # the failure was logged...
    assert _leaked(log) == []  # ...without an account number


async def test_one_flush_with_a_poison_row_commits_the_others_in_the_same_flush(
    uow_factory: UnitOfWorkFactory, settings: Settings
) -> None:
    tenant = await fresh_tenant(uow_factory)
    payments = [make_message(tenant_id=tenant, amount_cents=1000 + n, **_accounts(n)) for n in range(GROUP)]
    async with running_committer(settings.database_url) as committer:
        assert await committer.commit_many([payments[POISON_AT]]) == [Outcome.PROCESSED]
        await _purge_claim(uow_factory, tenant, payments[POISON_AT].message_id)
        outcomes = await committer.commit_many(payments)  # one call: one flush

    poison = outcomes.pop(POISON_AT)
    assert outcomes == [Outcome.PROCESSED] * (GROUP - 1)
    assert isinstance(poison, MessageFailure)
    assert (poison.reason, poison.retryable) == ("invalid", False)
    assert "SQLSTATE 23505" in str(poison)
    assert "uq_ledger_tenant_id_message_id" in str(poison)
    assert _leaked(str(poison)) == []
    assert await _booked(uow_factory, tenant) == GROUP


class _DroppingServer:
    """A 'PostgreSQL' that accepts TCP connections and closes them at once, counting them."""

    def __init__(self) -> None:
        self.port = free_port()
        self.connections = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> "_DroppingServer":
        self._server = await asyncio.start_server(self._drop, "127.0.0.1", self.port)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _drop(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.close()


async def test_a_connection_failure_fails_the_share_once_without_bisecting_it() -> None:
    tenant = "tdropped"
    async with _DroppingServer() as server:
        url = f"postgresql+asyncpg://remit_app@127.0.0.1:{server.port}/remit"
        async with running_committer(url) as committer:
            [alone] = await committer.commit_many([make_message(tenant_id=tenant)])
            per_transaction = server.connections
            outcomes = await committer.commit_many([make_message(tenant_id=tenant) for _ in range(16)])
    assert isinstance(alone, CommitFailed)
    assert per_transaction >= 1
    # Sixteen payments of one tenant: one transaction tried, as for one payment; halves would try 31.
    assert server.connections == 2 * per_transaction
    assert all(isinstance(o, CommitFailed) and o.retryable for o in outcomes)

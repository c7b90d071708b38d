"""Test helpers for the dead-letter store: the archiver process, dead letters published like the consumer
publishes them, and reads of the store."""

import asyncio
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aio_pika
from aio_pika.abc import AbstractChannel
from sqlalchemy import select

from app.deadletters.incoming import Archiving, IncomingDeadLetter
from app.deadletters.store import DeadLetterArchive
from app.messaging import headers
from app.messaging.connection import login_of
from app.messaging.queues import ready_count
from app.storage.tables import dead_letter_audit, dead_letters
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.identity import PublisherIdentity
from tests.utils.factories import make_wire_dict, to_wire_bytes
from tests.utils.services import AMQP_BASE, ServiceProcess, eventually

ARCHIVER_ARGS = [sys.executable, "-m", "faststream", "run", "app.deadletters.archiver_app:app"]
# The login the tests' service processes (consumer, archiver) use: the trusted publisher of dead letters.
SERVICE_LOGIN = login_of(AMQP_BASE)
ARCHIVING = Archiving(PublisherIdentity(frozenset({SERVICE_LOGIN}), "/"), 64 * 1024)


def start_archiver(env: Mapping[str, str], log_path: Path) -> ServiceProcess:
    return ServiceProcess(ARCHIVER_ARGS, env, log_path)


def consumer_headers(tenant: str | None, reason: str, **extra: Any) -> dict[str, Any]:
    """The headers app/consumer/failures.py puts on a dead letter (remit-failed-at unique per event) of a
    payment the relay published."""
    values: dict[str, Any] = {
        headers.PUBLISHED_BY: SERVICE_LOGIN,
        headers.REASON: reason,
        headers.ERROR_TYPE: "AccountClosed" if reason == "permanent_failure" else "CoreBankingTimeout",
        headers.ERROR_MESSAGE: f"test failure ({reason})",
        headers.ATTEMPTS: 4 if reason == "retries_exhausted" else 1,
        headers.FAILED_AT: datetime.now(UTC).isoformat(),
        headers.ORIGINAL_QUEUE: "payments.work",
        **extra,
    }
    if tenant is not None:
        values[headers.TENANT] = tenant
        values[headers.IDENTITY_TENANT] = tenant
    return values


async def archive_as_consumer(
    uow: UnitOfWorkFactory,
    wire: dict[str, Any],
    reason: str = "retries_exhausted",
    body: bytes | None = None,
    *,
    replay_of: int | None = None,
) -> int:
    """Store a dead letter of `wire` (or of another `body` under its ids) as the archiver stores what the
    consumer dead-letters (a new failure each call: give `replay_of` for the same message again); its id."""
    await file_as_consumer(uow, wire, reason, body, replay_of=replay_of)
    return int((await dead_letters_of(uow, wire["tenant_id"]))[-1].dead_letter_id)


async def file_as_consumer(
    uow: UnitOfWorkFactory,
    wire: dict[str, Any],
    reason: str = "retries_exhausted",
    body: bytes | None = None,
    *,
    replay_of: int | None = None,
) -> None:
    """archive_as_consumer through the ports alone (the in-memory fakes too), without reading its id back. The same
    message again is a new dead letter only as the failure of a replay (`replay_of`, the dead letter replayed)."""
    await asyncio.sleep(0.002)  # remit-failed-at is unique per failure
    chain = {} if replay_of is None else {headers.REPLAY_OF: replay_of}
    incoming = IncomingDeadLetter(
        to_wire_bytes(wire) if body is None else body,
        consumer_headers(wire["tenant_id"], reason, **chain),
        wire["message_id"],
        wire["correlation_id"],
        user_id=SERVICE_LOGIN,
        routing_key=f"{wire['tenant_id']}.payment",
    )
    assert await DeadLetterArchive(uow, ARCHIVING).archive(incoming)


async def publish_dead_letter(
    channel: AbstractChannel,
    body: bytes,
    message_headers: Mapping[str, Any],
    message_id: str | None = None,
    exchange: str = "payments.dlx",
    user_id: str | None = SERVICE_LOGIN,
) -> None:
    """Publish to the dead-letter exchange as the consumer does: as the service's own (trusted) login."""
    target = await channel.get_exchange(exchange)
    message = aio_pika.Message(
        body,
        content_type="application/json",
        delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        message_id=message_id,
        headers=dict(message_headers),
        user_id=user_id,
    )
    await target.publish(message, routing_key="", mandatory=True)


async def dead_letters_of(uow: UnitOfWorkFactory, tenant: str | None) -> list[Any]:
    query = select(dead_letters).order_by(dead_letters.c.dead_letter_id)
    query = query.where(dead_letters.c.tenant_id == tenant) if tenant else query
    async with uow() as u:
        return list((await u.connection.execute(query)).all())


async def dead_letter(uow: UnitOfWorkFactory, dead_letter_id: int) -> Any:
    async with uow() as u:
        query = select(dead_letters).where(dead_letters.c.dead_letter_id == dead_letter_id)
        return (await u.connection.execute(query)).one()


async def audit_of(uow: UnitOfWorkFactory, dead_letter_id: int) -> list[Any]:
    async with uow() as u:
        query = select(dead_letter_audit).where(dead_letter_audit.c.dead_letter_id == dead_letter_id)
        return list((await u.connection.execute(query.order_by(dead_letter_audit.c.audit_id))).all())


async def wait_for_dead_letters(uow: UnitOfWorkFactory, tenant: str | None, n: int, timeout: float = 30) -> list[Any]:
    async def stored() -> bool:
        return len(await dead_letters_of(uow, tenant)) >= n

    await eventually(stored, timeout=timeout, poll=0.1)
    return await dead_letters_of(uow, tenant)


async def queue_depth_now(amqp_url: str, queue: str) -> int:
    """Messages ready in the queue now (exact, unlike the management API's sampled figures)."""
    connection = await aio_pika.connect(amqp_url)
    try:
        return await ready_count(connection, queue) or 0
    finally:
        await connection.close()


async def send_failed_payment(channel: AbstractChannel, tenant: str) -> None:
    """A fresh payment of `tenant`, dead-lettered by the consumer as a permanent failure."""
    wire = make_wire_dict(tenant_id=tenant)
    await publish_dead_letter(
        channel, to_wire_bytes(wire), consumer_headers(tenant, "permanent_failure"), wire["message_id"]
    )


async def stored_count(uow: UnitOfWorkFactory, tenant: str, n: int) -> bool:
    """The archiver has stored exactly `n` dead letters of `tenant`."""
    return len(await dead_letters_of(uow, tenant)) == n

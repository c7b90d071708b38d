"""AMQP properties a tenant crafts that no decoder reads must not close the consumer's connection.

RabbitMQ passes most of a message's properties through unread: a direct publisher can set a correlation_id or an
app_id that is not UTF-8, or a timestamp past the year 9999. aiormq's reader (pamqp) raises on either, and the
connection closes: every delivery on it, every tenant's, goes back to the queue, and the same message comes again
and closes it again, up to the queue's delivery limit. remit reads such text with U+FFFD in place of the bad
bytes (it never uses those properties), and a content header nobody can read arrives without its properties, so
the consumer refuses that message with a reason (no content type, no user_id) instead of losing its connection
(app/messaging/frame_decoding.py, app/messaging/frame_reader.py). Every remit connection reads that way, the
archiver's too, which receives the same properties when the broker dead-letters such a message.
"""

import contextlib
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiormq
import pamqp.encode
import pytest
from aio_pika.abc import AbstractChannel
from pamqp import commands as spec

from app.messaging import headers
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.dead_letters import start_archiver, wait_for_dead_letters
from tests.utils.factories import make_wire_dict, to_wire_bytes
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.tenant_users import TenantPublisher, TenantUsers
from tests.utils.world import dead_letters, fresh_tenant, ledger_count

pytestmark = pytest.mark.integration

NOT_UTF8 = b"\xff\xfe\xfd"
YEAR_10000_AND_LATER = 2**64 - 1


@contextlib.contextmanager
def raw_property_values() -> Iterator[None]:
    """pamqp's encoder, taking bytes for a short string and an int for a timestamp as they are: what a hostile
    client writes on the wire."""
    short, stamp = pamqp.encode.METHODS["shortstr"], pamqp.encode.METHODS["timestamp"]

    def raw_short(value: Any) -> bytes:
        return struct.pack(">B", len(value)) + value if isinstance(value, bytes) else short(value)

    def raw_stamp(value: Any) -> bytes:
        return struct.pack(">Q", value) if isinstance(value, int) else stamp(value)

    pamqp.encode.METHODS["shortstr"], pamqp.encode.METHODS["timestamp"] = raw_short, raw_stamp
    try:
        yield
    finally:
        pamqp.encode.METHODS["shortstr"], pamqp.encode.METHODS["timestamp"] = short, stamp


async def _publish_raw(publisher: TenantPublisher, wire: dict[str, Any], **hostile: Any) -> None:
    properties = spec.Basic.Properties(
        content_type="application/json",
        delivery_mode=2,
        message_id=str(wire["message_id"]),
        user_id=publisher.user,
        headers={headers.TENANT: publisher.tenant},
        **hostile,
    )
    connection = await aiormq.connect(publisher.url)
    try:
        channel = await connection.channel()
        await channel.confirm_delivery()
        with raw_property_values():
            key = f"{publisher.tenant}.payment"
            body = to_wire_bytes(wire)
            await channel.basic_publish(body, exchange="payments", routing_key=key, properties=properties)
    finally:
        await connection.close()


async def test_unreadable_properties_neither_stall_the_consumer_nor_lose_the_message(
    uow_factory: UnitOfWorkFactory,
    channel: AbstractChannel,
    settings: Settings,
    consumer: ServiceProcess,
    tenant_users: TenantUsers,
) -> None:
    attacker, victim = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    publisher = tenant_users.publisher(attacker)
    bad_text, bad_stamp, victims = (
        make_wire_dict(tenant_id=attacker),
        make_wire_dict(tenant_id=attacker),
        make_wire_dict(tenant_id=victim),
    )

    await _publish_raw(publisher, bad_text, correlation_id=NOT_UTF8, app_id=NOT_UTF8)
    await _publish_raw(publisher, bad_stamp, timestamp=YEAR_10000_AND_LATER)
    await tenant_users.publisher(victim).publish(victims)

    async def booked() -> bool:
        return all([await ledger_count(uow_factory, w["message_id"]) == 1 for w in (bad_text, victims)])

    await eventually(booked)  # the text nobody uses does not matter: the payment is the body's
    [refused] = await dead_letters(channel, settings, 1)
    assert refused.body == to_wire_bytes(bad_stamp)
    assert refused.headers[headers.REASON] == "invalid", "refused by remit (it came without properties), not the broker"
    assert "content_type" in str(refused.headers[headers.ERROR_MESSAGE])
    assert await ledger_count(uow_factory, bad_stamp["message_id"]) == 0
    log = consumer.log_path.read_text()
    assert log.count("AMQP properties could not be read") == 1, "read once: never redelivered after a closed connection"
    assert "InvalidFrameError" not in log


async def test_one_that_expires_unread_is_archived_under_its_publisher(
    uow_factory: UnitOfWorkFactory, service_env: ServiceEnv, logs_dir: Path, tenant_users: TenantUsers
) -> None:
    """No consumer runs: the broker expires the message into the dead-letter exchange, and the archiver receives
    the same properties. It files the dead letter under the tenant that published it."""
    attacker = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=attacker)
    archiver = start_archiver(service_env.env(), logs_dir / "archiver.log")
    try:
        await _publish_raw(tenant_users.publisher(attacker), wire, correlation_id=NOT_UTF8, expiration="1")
        [row] = await wait_for_dead_letters(uow_factory, attacker, 1)
    finally:
        archiver.stop()

    assert (str(row.message_id), row.reason, row.body) == (wire["message_id"], "expired", to_wire_bytes(wire))
    assert "InvalidFrameError" not in archiver.log_path.read_text()

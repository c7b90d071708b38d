"""The archiver as a real process: payments.dlq on RabbitMQ into the dead_letters table in PostgreSQL."""

import asyncio
import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import aio_pika
import pytest
from aio_pika.abc import AbstractChannel
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from app.messaging import headers
from app.messaging.topology import Topology
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.dead_letters import (
    consumer_headers,
    dead_letters_of,
    publish_dead_letter,
    queue_depth_now,
    start_archiver,
    wait_for_dead_letters,
)
from tests.utils.factories import make_wire_dict, new_tenant_id, to_wire_bytes
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.world import route_tenant

pytestmark = pytest.mark.integration


@pytest.fixture
def archiver(service_env: ServiceEnv, logs_dir: Path) -> Iterator[ServiceProcess]:
    process = start_archiver(service_env.env(), logs_dir / "archiver.log")
    yield process
    process.stop()


async def test_consumer_dead_letter_is_stored_with_its_reason_and_payment_fields(
    channel: AbstractChannel, uow_factory: UnitOfWorkFactory, archiver: ServiceProcess
) -> None:
    tenant = new_tenant_id()
    wire = make_wire_dict(tenant_id=tenant, amount_cents=4321, currency="NZD")
    body = to_wire_bytes(wire)
    await publish_dead_letter(channel, body, consumer_headers(tenant, "permanent_failure"), wire["message_id"])

    [row] = await wait_for_dead_letters(uow_factory, tenant, 1)
    assert row.reason == "permanent_failure"
    assert row.error_type == "AccountClosed"
    assert str(row.message_id) == wire["message_id"]
    assert (row.correlation_id, row.payment_reference) == (wire["correlation_id"], wire["payment_reference"])
    assert (row.amount_cents, row.currency, row.attempts, row.status) == (4321, "NZD", 1, "open")
    assert row.original_queue == "payments.work"
    assert row.body == body  # byte for byte
    assert row.headers[headers.TENANT] == tenant


async def test_message_expired_in_the_work_queue_is_stored_as_expired(
    channel: AbstractChannel, uow_factory: UnitOfWorkFactory, settings: Settings, archiver: ServiceProcess
) -> None:
    tenant = new_tenant_id()
    await route_tenant(settings.amqp_url, tenant, "basic")  # routed, though never registered: no consumer runs
    wire = make_wire_dict(tenant_id=tenant)
    exchange = await channel.get_exchange(settings.exchange)
    # No consumer runs: the broker itself dead-letters the message when its 1 ms expiration passes.
    await exchange.publish(
        aio_pika.Message(
            to_wire_bytes(wire),
            message_id=wire["message_id"],
            headers={headers.TENANT: tenant},
            expiration=timedelta(milliseconds=1),
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        ),
        routing_key=f"{tenant}.payment",
    )
    [row] = await wait_for_dead_letters(uow_factory, tenant, 1)
    assert row.reason == "expired"
    assert row.error_type == "BrokerDeadLetter"
    assert row.original_queue == Topology.from_settings(settings).tier_queue("basic")
    assert row.attempts == 0
    assert row.amount_cents == wire["amount_cents"]
    assert row.headers["x-death"][0]["reason"] == "expired"


async def test_the_same_dead_letter_delivered_twice_is_stored_once(
    channel: AbstractChannel, uow_factory: UnitOfWorkFactory, archiver: ServiceProcess
) -> None:
    tenant = new_tenant_id()
    wire = make_wire_dict(tenant_id=tenant)
    event = consumer_headers(tenant, "retries_exhausted")
    for _ in range(2):
        await publish_dead_letter(channel, to_wire_bytes(wire), event, wire["message_id"])
    [first] = await wait_for_dead_letters(uow_factory, tenant, 1)
    # A later failure of the same message after an operator replayed it is a new dead letter.
    await asyncio.sleep(0.01)
    later = consumer_headers(tenant, "retries_exhausted", **{headers.REPLAY_OF: first.dead_letter_id})
    await publish_dead_letter(channel, to_wire_bytes(wire), later, wire["message_id"])

    rows = await wait_for_dead_letters(uow_factory, tenant, 2)
    await asyncio.sleep(1.0)  # every chance for the duplicate to be (wrongly) stored
    rows = await dead_letters_of(uow_factory, tenant)
    assert len(rows) == 2
    assert [r.replay_of for r in rows] == [None, first.dead_letter_id]
    assert [r.last_failed_at for r in rows] == [
        datetime.fromisoformat(event[headers.FAILED_AT]),
        datetime.fromisoformat(later[headers.FAILED_AT]),
    ]
    assert {r.first_failed_at for r in rows} == {datetime.fromisoformat(event[headers.FAILED_AT])}


async def test_a_second_copy_of_a_failure_updates_the_first_dead_letter(
    channel: AbstractChannel, uow_factory: UnitOfWorkFactory, settings: Settings, archiver: ServiceProcess
) -> None:
    """Issue 37 A: the consumer dead-letters a refusal again after a crash before its ack (a later remit-failed-at),
    the broker expires a copy the relay published twice, and a retry's last copy reaches the delivery limit: every
    one of them is the payment's first failure, one dead letter telling when it last failed."""
    tenant = new_tenant_id()
    wire = make_wire_dict(tenant_id=tenant)
    body = to_wire_bytes(wire)
    first = consumer_headers(tenant, "account_closed", **{headers.ATTEMPTS: 1})
    await publish_dead_letter(channel, body, first, wire["message_id"])
    [row] = await wait_for_dead_letters(uow_factory, tenant, 1)
    await asyncio.sleep(0.01)
    again = consumer_headers(tenant, "account_closed", **{headers.ATTEMPTS: 3})
    await publish_dead_letter(channel, body, again, wire["message_id"])

    async def updated() -> bool:
        [now] = await dead_letters_of(uow_factory, tenant)
        return bool(now.attempts == 3)

    await eventually(updated)
    [merged] = await dead_letters_of(uow_factory, tenant)
    assert merged.dead_letter_id == row.dead_letter_id
    assert (merged.reason, merged.error_type, merged.status) == ("account_closed", row.error_type, "open")
    assert merged.first_failed_at == datetime.fromisoformat(first[headers.FAILED_AT])
    assert merged.last_failed_at == datetime.fromisoformat(again[headers.FAILED_AT])

    # The broker's copies of another payment (x-death only): published twice, expired twice, one dead letter.
    await route_tenant(settings.amqp_url, tenant, "basic")  # routed, never registered: no consumer runs
    expiring = make_wire_dict(tenant_id=tenant)
    exchange = await channel.get_exchange(settings.exchange)
    for _ in range(2):
        copy = aio_pika.Message(
            to_wire_bytes(expiring),
            message_id=expiring["message_id"],
            headers={headers.TENANT: tenant},
            expiration=timedelta(milliseconds=1),
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
        )
        await exchange.publish(copy, routing_key=f"{tenant}.payment")
        await asyncio.sleep(1.1)  # x-death times have one-second resolution: a copy of its own time

    async def both_expired() -> bool:
        rows = [r for r in await dead_letters_of(uow_factory, tenant) if str(r.message_id) == expiring["message_id"]]
        return len(rows) > 1 or (len(rows) == 1 and rows[0].last_failed_at > rows[0].first_failed_at)

    await eventually(both_expired)
    rows = await dead_letters_of(uow_factory, tenant)
    assert sorted(str(r.message_id) for r in rows) == sorted([wire["message_id"], expiring["message_id"]])
    [expired] = [r for r in rows if str(r.message_id) == expiring["message_id"]]
    assert expired.reason == "expired"


async def test_archiver_killed_mid_stream_loses_and_doubles_nothing(
    channel: AbstractChannel,
    uow_factory: UnitOfWorkFactory,
    service_env: ServiceEnv,
    settings: Settings,
    logs_dir: Path,
) -> None:
    tenant = new_tenant_id()
    total = 200
    await asyncio.gather(
        *(
            publish_dead_letter(
                channel,
                to_wire_bytes(wire := make_wire_dict(tenant_id=tenant)),
                consumer_headers(tenant, "retries_exhausted"),
                wire["message_id"],
            )
            for _ in range(total)
        )
    )
    doomed = start_archiver(service_env.env(), logs_dir / "archiver-doomed.log")

    async def some_stored() -> bool:
        return len(await dead_letters_of(uow_factory, tenant)) >= 20

    await eventually(some_stored, timeout=30, poll=0.02)
    doomed.kill()
    assert len(await dead_letters_of(uow_factory, tenant)) < total, "killed too late to test anything"

    survivor = start_archiver(service_env.env(), logs_dir / "archiver.log")
    try:
        await wait_for_dead_letters(uow_factory, tenant, total)

        async def drained() -> bool:
            return await queue_depth_now(settings.amqp_url, settings.dead_letter_queue) == 0

        await eventually(drained, timeout=30)
    finally:
        survivor.stop()
    rows = await dead_letters_of(uow_factory, tenant)
    assert len(rows) == total
    assert len({r.message_id for r in rows}) == total


# Bodies a broken or hostile publisher could produce: raw bytes, JSON that is not an object, objects with
# fields missing or of the wrong type.
malformed_bodies = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=100).map(str.encode),
    st.lists(st.integers()).map(lambda v: json.dumps(v).encode()),
    st.dictionaries(
        st.sampled_from(["message_id", "amount_cents", "currency", "payment_reference", "tenant_id"]),
        st.one_of(st.none(), st.booleans(), st.floats(allow_nan=False), st.text(max_size=20), st.integers()),
    ).map(lambda d: json.dumps(d).encode()),
)


async def test_a_stream_of_malformed_dead_letters_is_stored_in_full_and_the_archiver_keeps_running(
    channel: AbstractChannel, uow_factory: UnitOfWorkFactory, archiver: ServiceProcess
) -> None:
    tenant = new_tenant_id()
    stream: list[tuple[bytes, bool]] = []

    # Collected first and published in one go: a broker round trip per example would make this slow.
    @hsettings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(bodies=st.lists(malformed_bodies, min_size=1, max_size=5), with_reason=st.booleans())
    def collect(bodies: list[bytes], with_reason: bool) -> None:
        stream.extend((body, with_reason) for body in bodies)

    collect()
    for n, (body, with_reason) in enumerate(stream):
        # Without remit-* headers it looks like something published to payments.dlx by hand.
        extra = {headers.TENANT: tenant, "test-seq": n}
        message_headers = {**consumer_headers(tenant, "invalid"), **extra} if with_reason else extra
        await publish_dead_letter(channel, body, message_headers)
    published = [body for body, _ in stream]

    rows = await wait_for_dead_letters(uow_factory, tenant, len(published))
    assert sorted(r.body for r in rows) == sorted(published)
    assert {r.reason for r in rows} <= {"invalid", "unknown"}
    assert all(r.reason == ("invalid" if r.headers.get(headers.REASON) else "unknown") for r in rows)
    assert archiver.proc.poll() is None

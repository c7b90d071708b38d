"""A tenant's hostile AMQP properties stall nobody: the attack on the real broker, as the tenant's own RabbitMQ user.

Tenant A publishes valid payments whose properties no decoder should read (tests/utils/hostile_properties.py:
tables nested to the frame's size, too many values, text that is not UTF-8, timestamps past 9999...) on its own
routing key, in tenant B's tier, while B's payments flow. Before the guard (app/messaging/amqp_guard.py) one such
message closed the consumer's connection at every redelivery (B's payments went back to the queue with their
delivery counts raised) and, once dead-lettered, the archiver's. Now each is A's own dead letter
(`unreadable_properties`, with the raw header's length and SHA-256), B's payments are booked once, and no
connection of the consumer or the archiver closes (the broker's own list of them, before and after).
"""

import contextlib
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiormq
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from app.messaging import headers
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.cli import remit
from tests.utils.connections import service_connections
from tests.utils.dead_letters import dead_letters_of, start_archiver, wait_for_dead_letters
from tests.utils.factories import make_wire_dict, to_wire_bytes
from tests.utils.hostile_properties import hostile_properties, nested, payment_properties, publish_raw, shortstr
from tests.utils.services import ServiceEnv, ServiceProcess, eventually
from tests.utils.tenant_users import TenantPublisher, TenantUsers
from tests.utils.world import booked_once, fresh_tenant, ledger_count

pytestmark = pytest.mark.integration

CONSUMER_CONNECTIONS = 5  # the process's own (retries, dead letters) and one per tier pool
VARIANTS = 40


@pytest.fixture
def archiver(service_env: ServiceEnv, logs_dir: Path) -> Iterator[ServiceProcess]:
    process = start_archiver(service_env.env(), logs_dir / "archiver.log")
    yield process
    process.stop()


def _drawn(user: str, tenant: str, count: int, **extra: bytes) -> list[tuple[str, bytes, dict[str, Any]]]:
    """`count` hostile messages of every kind: (kind, raw properties, the valid payment they carry)."""
    found: list[tuple[str, bytes, dict[str, Any]]] = []

    @seed(20261202)
    @settings(
        max_examples=count,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def draw(data: st.DataObject) -> None:
        wire = make_wire_dict(tenant_id=tenant)
        kind, raw = data.draw(hostile_properties(user, tenant, str(wire["message_id"]), extra))
        found.append((kind, raw, wire))

    draw()
    return found[:count]


async def _send(publisher: TenantPublisher, messages: list[tuple[bytes, bytes]]) -> list[bool]:
    """(raw properties, body) each, as the publisher's own user on its own key, with confirms; whether RabbitMQ took
    each (it refuses some itself, an unknown field type for one, by closing the connection: then a new one)."""
    taken: list[bool] = []
    for raw, body in messages:
        connection = await aiormq.connect(publisher.url)
        try:
            channel = await connection.channel()
            await channel.confirm_delivery()
            await publish_raw(channel, f"{publisher.tenant}.payment", body, raw)
            taken.append(True)
        except aiormq.exceptions.AMQPError:
            taken.append(False)
        finally:
            with contextlib.suppress(Exception):
                await connection.close()
    return taken


def _sha(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


async def test_one_deeply_nested_header_stalls_no_other_tenant(
    uow_factory: UnitOfWorkFactory,
    service_env: ServiceEnv,
    vhost: str,
    consumer: ServiceProcess,
    archiver: ServiceProcess,
    tenant_users: TenantUsers,
) -> None:
    """The attack as reported: 800 levels (about 6 KB), then B's 20 payments; the poison's trace says why."""
    attacker, victim = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    a, b = tenant_users.publisher(attacker), tenant_users.publisher(victim)
    before = service_connections(vhost, "remit-", CONSUMER_CONNECTIONS + 1)
    poison = make_wire_dict(tenant_id=attacker)
    raw = payment_properties(a.user, attacker, str(poison["message_id"]), (b"deep", nested(800)))
    payments = [make_wire_dict(tenant_id=victim) for _ in range(20)]

    await _send(a, [(raw, to_wire_bytes(poison))])
    for wire in payments:
        await b.publish(wire)
    for wire in payments:
        await eventually(booked_once(uow_factory, wire["message_id"]))
    [dead] = await wait_for_dead_letters(uow_factory, attacker, 1)

    assert (dead.reason, dead.body_sha256) == ("unreadable_properties", _sha(to_wire_bytes(poison)))
    assert dead.headers[headers.PROPERTIES_LENGTH] == len(raw) + 12, "the content header as the publisher wrote it"
    assert "RecursionError" in dead.headers[headers.PROPERTIES_UNREADABLE]
    assert await ledger_count(uow_factory, poison["message_id"]) == 0
    assert await dead_letters_of(uow_factory, victim) == []
    assert service_connections(vhost, "remit-", len(before)) == before, "no connection closed or came back"
    code, out = await remit(service_env.env(), "trace", str(poison["message_id"]), "--tenant", attacker, "--json")
    assert code == 0, out
    [event] = [e for e in json.loads(out)["events"] if e["stage"] == "dead_lettered"]
    assert "its AMQP properties were unreadable (RecursionError decoding them)" in event["summary"]


async def test_every_kind_of_unreadable_properties_is_the_attackers_own_dead_letter(
    uow_factory: UnitOfWorkFactory,
    vhost: str,
    consumer: ServiceProcess,
    archiver: ServiceProcess,
    tenant_users: TenantUsers,
) -> None:
    attacker, victim = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    a, b = tenant_users.publisher(attacker), tenant_users.publisher(victim)
    before = service_connections(vhost, "remit-", CONSUMER_CONNECTIONS + 1)
    hostile = _drawn(a.user, attacker, VARIANTS)
    payments = [make_wire_dict(tenant_id=victim) for _ in range(VARIANTS)]

    taken = []
    for (kind, raw, wire), honest in zip(hostile, payments, strict=True):
        if (await _send(a, [(raw, to_wire_bytes(wire))]))[0]:
            taken.append((kind, raw, wire))
        await b.publish(honest)
    for wire in payments:
        await eventually(booked_once(uow_factory, wire["message_id"]))
    filed = await wait_for_dead_letters(uow_factory, attacker, len(taken), timeout=60)

    refused = {kind for kind, *_ in hostile} - {kind for kind, *_ in taken}
    assert refused <= {"unknown_type"}, "RabbitMQ itself refuses only unknown field types"
    by_body = {row.body_sha256: row for row in filed}
    for kind, _, wire in taken:
        row = by_body.get(_sha(to_wire_bytes(wire)))
        assert row is not None, f"{kind}: not filed under the attacker"
        assert row.reason == "unreadable_properties", kind
        assert row.headers[headers.PROPERTIES_SHA256], kind
        assert await ledger_count(uow_factory, wire["message_id"]) == 0, kind
    assert len(filed) == len(taken), "each once"
    assert await dead_letters_of(uow_factory, victim) == []
    assert service_connections(vhost, "remit-", len(before)) == before, "no connection closed or came back"
    assert consumer.proc.poll() is None
    assert archiver.proc.poll() is None


async def test_in_the_dead_letter_queue_they_are_archived_and_stop_nothing(
    uow_factory: UnitOfWorkFactory, vhost: str, archiver: ServiceProcess, tenant_users: TenantUsers
) -> None:
    """No consumer runs: the broker expires them into the dead-letter queue (which has no delivery limit, so before
    the guard one of them closed the archiver's connection for good), and an ordinary dead letter after them."""
    attacker = await fresh_tenant(uow_factory)
    a = tenant_users.publisher(attacker)
    before = service_connections(vhost, "remit-archiver", 1)
    drawn = _drawn(a.user, attacker, 12, expiration=shortstr(b"1"))
    plain = make_wire_dict(tenant_id=attacker)

    taken = await _send(a, [(raw, to_wire_bytes(wire)) for _, raw, wire in drawn])
    await a.publish(plain, expiration=0.001)
    hostile = [message for message, took in zip(drawn, taken, strict=True) if took]
    filed = await wait_for_dead_letters(uow_factory, attacker, len(hostile) + 1, timeout=60)

    by_body = {row.body_sha256: row for row in filed}
    for kind, _, wire in hostile:
        row = by_body[_sha(to_wire_bytes(wire))]
        assert row.reason == "expired", kind
        assert row.tenant_id == attacker, kind
        assert row.headers[headers.PROPERTIES_UNREADABLE], kind
    assert by_body[_sha(to_wire_bytes(plain))].reason == "expired"
    assert service_connections(vhost, "remit-archiver", 1) == before, "the archiver's connection stayed up"

"""Looking at what waits in a quorum queue without disturbing it, on the real broker (RabbitMQ 3.10).

First the fact that decided the method: reading messages and giving them back, in any of the five ways
there are (closing the channel, nack, reject, recover, the management API's get), keeps their order but
raises every one's `x-delivery-count`, so each look would spend one of the work queue's 20 deliveries.
Then `remit queues peek`, which uses the broker's own peek: one tenant's messages by publisher identity,
masked, with nothing taken, reordered or counted.
"""

import json
import struct
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiormq
import httpx
import pytest
from aio_pika.abc import AbstractChannel, AbstractIncomingMessage, AbstractRobustConnection

from app.bootstrap import publisher_identity
from app.messaging.broker_peek import UNREADABLE, BrokerPeek
from app.messaging.queues import ready_count
from app.observability.peek import Peeked, PeekRequest, peek_queue
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.cli import remit
from tests.utils.factories import make_wire_dict, to_wire_bytes
from tests.utils.hostile_properties import nested, payment_properties, publish_raw
from tests.utils.queues import accept_payments, publish_like_the_relay, require_broker_cli, take_all
from tests.utils.services import MANAGEMENT_AUTH, MANAGEMENT_URL, ServiceEnv, eventually
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import fresh_tenant, send_payment

pytestmark = pytest.mark.integration

BASIC = "payments.work.basic"


async def give_back(amqp: AbstractRobustConnection, vhost: str, how: str, n: int) -> list[str]:
    """Read n messages off the head of the basic queue and give them back to it, `how`; their ids in order."""
    if how == "management get":
        path = f"/api/queues/{quote(vhost, safe='')}/{BASIC}/get"
        request = {"count": n, "ackmode": "ack_requeue_true", "encoding": "auto"}
        async with httpx.AsyncClient(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH) as client:
            return [m["properties"]["message_id"] for m in (await client.post(path, json=request)).json()]
    peeker = await amqp.channel()
    await peeker.set_qos(prefetch_count=n)
    read: list[AbstractIncomingMessage] = []
    async with (await peeker.get_queue(BASIC, ensure=False)).iterator() as messages:
        async for message in messages:
            read.append(message)
            if len(read) == n:
                break
    if how == "nack":
        await read[-1].nack(multiple=True, requeue=True)
    elif how == "reject":
        for message in read:
            await message.reject(requeue=True)
    elif how == "recover":
        await (await peeker.get_underlay_channel()).basic_recover(requeue=True)
    await peeker.close()  # "close": the broker takes back what the channel held
    return [str(m.message_id) for m in read]


@pytest.mark.parametrize("how", ["close", "nack", "reject", "recover", "management get"])
async def test_reading_and_giving_back_raises_the_delivery_count(
    amqp: AbstractRobustConnection,
    channel: AbstractChannel,
    settings: Settings,
    uow_factory: UnitOfWorkFactory,
    vhost: str,
    how: str,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wires = [make_wire_dict(tenant_id=tenant) for _ in range(3)]
    for wire in wires:
        await send_payment(settings, wire)
    read = await give_back(amqp, vhost, how, len(wires))

    taken = await take_all(amqp, BASIC, len(wires))
    assert [m for m, _ in taken] == [w["message_id"] for w in wires] == read  # order kept...
    assert [count for _, count in taken] == [1, 1, 1]  # ...but each look counted as a delivery


class Scene:
    """Tenant a's three payments from the outbox (as the relay publishes them), interleaved with tenant b's
    three, then one b published with its own login claiming, in header and body, to be a."""

    def __init__(self, a: str, b: str, a_rows: list[Any], b_wires: list[dict[str, Any]], forged: dict[str, Any]):
        self.a, self.b, self.a_rows, self.b_wires, self.forged = a, b, a_rows, b_wires, forged

    @property
    def order(self) -> list[str]:
        pairs = [[str(r.message_id), w["message_id"]] for r, w in zip(self.a_rows, self.b_wires, strict=True)]
        return [m for pair in pairs for m in pair] + [self.forged["message_id"]]


@pytest.fixture
async def scene(
    channel: AbstractChannel,
    settings: Settings,
    uow_factory: UnitOfWorkFactory,
    tenant_users: TenantUsers,
    tmp_path: Path,
) -> Scene:
    require_broker_cli()
    a, b = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    a_rows = await accept_payments(uow_factory, a, 3, tmp_path)
    b_wires = [make_wire_dict(tenant_id=b) for _ in range(3)]
    for row, wire in zip(a_rows, b_wires, strict=True):
        await publish_like_the_relay(settings.amqp_url, [row])
        await send_payment(settings, wire)
    forged = make_wire_dict(tenant_id=a)
    await tenant_users.publisher(b).publish(forged, tenant_header=a)
    return Scene(a, b, a_rows, b_wires, forged)


async def peek(settings: Settings, uow: UnitOfWorkFactory, vhost: str, **request: Any) -> Peeked:
    values = {"queue": BASIC, "tenant": None, "limit": 20, "scan": 50, **request}
    return await peek_queue(
        BrokerPeek(["rabbitmq-queues"]),
        publisher_identity(settings),
        uow,
        vhost,
        PeekRequest(**values),
        datetime.now(UTC),
    )


async def test_peek_shows_one_tenants_messages_and_leaves_every_message_in_place(
    scene: Scene, amqp: AbstractRobustConnection, settings: Settings, uow_factory: UnitOfWorkFactory, vhost: str
) -> None:
    peeked = await peek(settings, uow_factory, vhost, tenant=scene.a)
    assert [p.message_id for p in peeked.payments] == [str(r.message_id) for r in scene.a_rows]
    assert [p.position for p in peeked.payments] == [1, 3, 5]
    assert (peeked.scanned, peeked.end_of_queue) == (7, True)
    first = peeked.payments[0]
    assert (first.tenant, first.basis, first.published_by, first.delivery_count) == (scene.a, "trusted", "guest", 0)
    assert first.payment == {
        "payment_reference": scene.a_rows[0].payment_reference,
        "amount_cents": 1000,
        "currency": "AUD",
        "correlation_id": scene.a_rows[0].correlation_id,
        "debtor": "012-345 ******000",  # 100000000
        "creditor": "033-001 ******000",  # 900000000
    }

    # b's own login published the forgery: it is b's, whatever its header and body say.
    theirs = await peek(settings, uow_factory, vhost, tenant=scene.b)
    expected = [*(w["message_id"] for w in scene.b_wires), scene.forged["message_id"]]
    assert [p.message_id for p in theirs.payments] == expected
    assert theirs.payments[-1].basis == "login"
    assert all(p.payment is None for p in theirs.payments)  # not remit's outbox rows: the masked prefix only

    # Nothing was taken, reordered or counted as a delivery.
    assert await ready_count(amqp, BASIC) == len(scene.order)
    taken = await take_all(amqp, BASIC, len(scene.order))
    assert [m for m, _ in taken] == scene.order
    assert [count for _, count in taken] == [None] * len(scene.order)


# a's messages sit at positions 1, 3 and 5 of 7; the broker's CLI is asked four positions at a time.
@pytest.mark.parametrize(
    ("limit", "scan", "shown", "scanned"), [(2, 50, 2, 4), (3, 50, 3, 7), (4, 50, 3, 7), (3, 4, 2, 4)]
)
async def test_peek_stops_at_the_limit_or_the_scan(
    scene: Scene,
    settings: Settings,
    uow_factory: UnitOfWorkFactory,
    vhost: str,
    limit: int,
    scan: int,
    shown: int,
    scanned: int,
) -> None:
    peeked = await peek(settings, uow_factory, vhost, tenant=scene.a, limit=limit, scan=scan)
    assert len(peeked.payments) == shown
    assert peeked.scanned == scanned


async def test_remit_queues_peek_prints_masked_messages_of_one_tenant(scene: Scene, service_env: ServiceEnv) -> None:
    code, out = await remit(service_env.env(), "queues", "peek", BASIC, "--tenant", scene.a, "--limit", "20")
    assert code == 0, out
    assert "3 message(s) of tenant" in out
    for row in scene.a_rows:
        assert row.payment_reference in out
    assert "******000" in out
    assert "100000000" not in out
    assert "900000000" not in out
    assert scene.b not in out

    code, out = await remit(service_env.env(), "queues", "peek", BASIC, "--tenant", scene.b, "--json")
    assert code == 0, out
    shown = json.loads(out)
    assert [p["message_id"] for p in shown["payments"]][-1] == scene.forged["message_id"]
    assert "123456789" not in out
    assert "987654321" not in out

    code, out = await remit(service_env.env(), "queues", "peek", "payments.elsewhere")
    assert code == 2
    assert "is not one of remit's queues" in out


async def test_a_message_whose_headers_no_json_reader_takes_is_shown_unreadable(
    settings: Settings, uow_factory: UnitOfWorkFactory, service_env: ServiceEnv, tenant_users: TenantUsers
) -> None:
    """At the head of a queue: `remit queues peek` and `remit queues list` keep working and say what they can."""
    require_broker_cli()
    tenant = await fresh_tenant(uow_factory)
    attacker = tenant_users.publisher(tenant)
    poison, after = make_wire_dict(tenant_id=tenant), make_wire_dict(tenant_id=tenant)
    stamp = struct.pack(">Q", int(datetime.now(UTC).timestamp()))
    raw = payment_properties(attacker.user, tenant, str(poison["message_id"]), (b"deep", nested(800)), timestamp=stamp)
    connection = await aiormq.connect(attacker.url)
    channel = await connection.channel()
    await channel.confirm_delivery()
    await publish_raw(channel, f"{tenant}.payment", to_wire_bytes(poison), raw)
    await connection.close()
    await attacker.publish(after)

    code, out = await remit(service_env.env(), "queues", "peek", BASIC, "--tenant", tenant, "--json")
    assert code == 0, out
    first, second = json.loads(out)["payments"]
    assert (first["message_id"], first["tenant"], first["basis"]) == (str(poison["message_id"]), tenant, "login")
    assert first["body_prefix"] == UNREADABLE
    assert second["message_id"] == str(after["message_id"])
    listed: list[dict[str, Any]] = []

    async def both_listed() -> bool:  # the management API's figures lag by a statistics interval
        code, out = await remit(service_env.env(), "queues", "list", "--json")
        assert code == 0, out
        listed[:] = [q for q in json.loads(out)["live"]["queues"] if q["name"] == BASIC]
        return bool(listed[0]["ready"] == 2)

    await eventually(both_listed, timeout=30, poll=1.0)
    assert listed[0]["oldest_age_seconds"] is not None, "its timestamp read all the same"

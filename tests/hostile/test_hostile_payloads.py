"""A tenant publishing directly as its own RabbitMQ user never passed ingress. The consumer holds it to
the same business rules ingress applies, an oversize body costs the consumer a bounded amount of memory
while another tenant's payments flow, and each pool's window is bounded by bytes, not only by count.

Limits here are the defaults, written out: 100,000,000 cents per payment, 300 s of clock skew, a TTL of
at most 604,800 s, no check name required (the names are recorded), a 64 KiB body cap cut to a 4 KiB prefix, and the
broker's own max_message_size of 16 MiB (scripts/services.sh, docker-compose's rabbitmq.conf).
"""

import asyncio
import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import aiormq.exceptions
import httpx
import pytest
from aio_pika.abc import AbstractChannel

from app.messaging import headers
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from contracts import wire_timestamp
from tests.utils.factories import make_wire_dict, padded_body
from tests.utils.memory import PeakRss
from tests.utils.services import MANAGEMENT_AUTH, MANAGEMENT_URL, ServiceEnv, ServiceProcess, eventually
from tests.utils.tenant_users import TenantPublisher, TenantUsers
from tests.utils.world import (
    attempts_for,
    booked_once,
    dead_letters,
    fresh_tenant,
    ledger_count,
    ledger_rows_for_tenant,
)

pytestmark = pytest.mark.integration

MiB = 1024 * 1024
TIERS = ("free", "basic", "premium", "enterprise")


class _In:
    """A timestamp `seconds` from when the test publishes (not from when the module was collected)."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds


def _at(seconds: int) -> str:
    return wire_timestamp(datetime.now(UTC) + timedelta(seconds=seconds))


# (overrides of a valid payment, what the dead letter's error must say; None: booked)
def _now(overrides: dict[str, Any]) -> dict[str, Any]:
    return {k: _at(v.seconds) if isinstance(v, _In) else v for k, v in overrides.items()}


CASES: dict[str, tuple[dict[str, Any], str | None]] = {
    "10^14 cents": (
        {"amount_cents": 10**14},
        "amount_cents 100000000000000 is over the per-payment limit of 100000000",
    ),
    "amount just above the limit": ({"amount_cents": 100_000_001}, "over the per-payment limit of 100000000"),
    "amount at the limit": ({"amount_cents": 100_000_000}, None),
    "debtor = creditor": (
        {"creditor_bsb": "012-345", "creditor_account": "123456789"},
        "debtor and creditor are the same account",
    ),
    "year 2099": ({"timestamp_utc": "2099-01-01T00:00:00Z"}, "timestamp_utc is"),
    "10 minutes ahead": ({"timestamp_utc": _In(600)}, "in the future, over the 300 s clock-skew bound"),
    "2 minutes ahead": ({"timestamp_utc": _In(120)}, None),
    # Check names are the publisher's claim, recorded, not required by default (issue 37, item 6).
    "empty checks": ({"validation_result": {"passed": True, "checks": []}}, None),
    "reference/004's checks": (
        {"validation_result": {"passed": True, "checks": ["customer_exists", "bsb_valid", "limit_ok"]}},
        None,
    ),
    "validation failed": (
        {"validation_result": {"passed": False, "checks": ["limit_ok"]}},
        "validation_result.passed is false: the publisher did not validate this payment",
    ),
    "ttl over the bound": ({"ttl_seconds": 604_801}, "ttl_seconds 604801 is over the limit of 604800"),
    "ttl at the bound": ({"ttl_seconds": 604_800}, None),
}


async def test_a_direct_publisher_is_held_to_the_business_rules(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    consumer: ServiceProcess,
    tenant_users: TenantUsers,
) -> None:
    attacker = await fresh_tenant(uow_factory)
    publisher = tenant_users.publisher(attacker)
    sent = {name: make_wire_dict(tenant_id=attacker, **_now(overrides)) for name, (overrides, _) in CASES.items()}
    for wire in sent.values():
        await publisher.publish(wire)
    refused = {name for name, (_, error) in CASES.items() if error is not None}
    for name in CASES.keys() - refused:
        await eventually(booked_once(uow_factory, sent[name]["message_id"]))
    assert [name for name in sorted(refused) if await ledger_count(uow_factory, sent[name]["message_id"])] == []

    dead = {d.message_id: d for d in await dead_letters(channel, settings, len(refused))}
    for name in refused:
        message_id = sent[name]["message_id"]
        letter = dead[message_id]
        assert letter.headers[headers.REASON] == "invalid", name
        error, expected = str(letter.headers[headers.ERROR_MESSAGE]), CASES[name][1]
        assert expected is not None
        assert expected in error, (name, error)
        [attempt] = await attempts_for(uow_factory, message_id)
        assert (attempt.tenant_id, attempt.outcome) == (attacker, "dead_lettered"), name
    assert len(await ledger_rows_for_tenant(uow_factory, attacker)) == len(CASES) - len(refused)


async def test_oversize_bodies_cost_bounded_memory_while_another_tenant_flows(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    consumer: ServiceProcess,
    tenant_users: TenantUsers,
) -> None:
    attacker, victim = await fresh_tenant(uow_factory), await fresh_tenant(uow_factory)
    a, b = tenant_users.publisher(attacker), tenant_users.publisher(victim)
    warm_up = make_wire_dict(tenant_id=victim)
    await b.publish(warm_up)
    await eventually(booked_once(uow_factory, warm_up["message_id"]))

    oversize = {}
    for _ in range(10):
        wire = make_wire_dict(tenant_id=attacker)
        oversize[wire["message_id"]] = padded_body(wire, 12 * MiB)
    payments = [make_wire_dict(tenant_id=victim) for _ in range(50)]

    async with PeakRss(consumer.proc.pid) as rss:
        baseline = rss.now()
        await asyncio.gather(_publish_all(a, oversize), _publish_slowly(b, payments))
        dead = await dead_letters(channel, settings, len(oversize), timeout=120)

        async def all_booked() -> bool:
            return len(await ledger_rows_for_tenant(uow_factory, victim)) == len(payments) + 1

        await eventually(all_booked, timeout=60)
    for payment in [warm_up, *payments]:
        assert await ledger_count(uow_factory, payment["message_id"]) == 1
    assert await ledger_rows_for_tenant(uow_factory, attacker) == []

    # 120 MiB went through the consumer. Cut on arrival, each body is held once while aiormq assembles it
    # (its buffer, the joined copy, the delivery waiting for our callback: about 3 x 12 MiB) and then only
    # as a 4 KiB prefix; 64 MiB leaves room for the allocator keeping freed blocks. Held whole, ten bodies
    # in the pool's window and their dead-letter copies cost far more than that.
    assert rss.peak - baseline < 64 * MiB, f"consumer RSS grew by {(rss.peak - baseline) / MiB:.0f} MiB"
    for letter in dead:
        original = oversize[letter.message_id]
        assert letter.headers[headers.REASON] == "oversize"
        assert letter.headers[headers.BODY_TRUNCATED] is True
        assert letter.headers[headers.BODY_LENGTH] == 12 * MiB
        assert letter.headers[headers.BODY_SHA256] == hashlib.sha256(original).hexdigest()
        assert len(letter.body) == 4096
        assert original.startswith(letter.body)
    assert sorted(d.message_id for d in dead) == sorted(oversize)
    assert consumer.proc.poll() is None


async def _publish_all(publisher: TenantPublisher, bodies: dict[str, bytes]) -> None:
    for message_id, body in bodies.items():
        await publisher.publish_bytes(body, message_id=message_id)


async def _publish_slowly(publisher: TenantPublisher, wires: list[dict[str, Any]]) -> None:
    for wire in wires:
        await publisher.publish(wire)
        await asyncio.sleep(0.05)


async def test_a_body_over_the_brokers_max_message_size_never_reaches_remit(
    uow_factory: UnitOfWorkFactory, settings: Settings, channel: AbstractChannel, tenant_users: TenantUsers
) -> None:
    attacker = await fresh_tenant(uow_factory)
    publisher = tenant_users.publisher(attacker)
    wire = make_wire_dict(tenant_id=attacker)
    # RabbitMQ closes the publisher's channel (406); the connection stays up, the message is not routed.
    with pytest.raises(aiormq.exceptions.ChannelPreconditionFailed, match="larger than configured max size 16777216"):
        await publisher.publish_bytes(padded_body(wire, 20 * MiB), message_id=wire["message_id"])
    at_the_limit = make_wire_dict(tenant_id=attacker)
    await publisher.publish_bytes(padded_body(at_the_limit, 16 * MiB), message_id=at_the_limit["message_id"])


async def test_each_pools_window_is_bounded_by_bytes_on_the_broker(
    service_env: ServiceEnv, uow_factory: UnitOfWorkFactory, vhost: str, logs_dir: Path
) -> None:
    # 1 MiB per pool over a 64 KiB cap: 16 deliveries, whatever prefetch x workers (100 to 1,000) says.
    env = service_env.env(REMIT_POOL_MAX_HELD_BYTES=str(MiB))
    consumer = ServiceProcess.consumer(env, logs_dir / "consumer.log")
    try:
        await consumer.ready()  # a loaded machine may take a while to start it

        async def every_pool_consumes() -> bool:
            return len(_prefetch_by_queue(vhost)) >= 4

        await eventually(every_pool_consumes, timeout=60)
        assert _prefetch_by_queue(vhost) == {f"payments.work.{tier}": 16 for tier in TIERS}
    finally:
        consumer.stop()


def _prefetch_by_queue(vhost: str) -> dict[str, int]:
    with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH, timeout=10) as client:
        consumers = client.get(f"/api/consumers/{quote(vhost, safe='')}").raise_for_status().json()
    return {c["queue"]["name"]: c["prefetch_count"] for c in consumers}

"""A tenant publishing directly is held to its limits before anything is read: its in-flight limit and
publish rate (over: `over_limit`), its status (suspended: `tenant_suspended`). remit's own publishes were
admitted at ingress and are never charged again."""

from typing import Any

import pytest

from tests.fakes.database import FakeDatabase
from tests.fakes.outbox import accepted
from tests.unit.consumer.harness import Consumer, add_tenant, direct, relayed, running_consumer
from tests.utils.factories import make_message


async def deliver_payments(db: FakeDatabase, n: int, publish: Any = direct, **limits: Any) -> Consumer:
    tenant = (await add_tenant(db, **limits)).tenant_id
    async with running_consumer(db) as consumer:
        settled = await consumer.deliver(*(publish(make_message(tenant_id=tenant)) for _ in range(n)))
    assert all(settled)
    return consumer


@pytest.mark.parametrize(("payments", "over"), [(2, 0), (3, 1)])
async def test_past_the_in_flight_limit_the_rest_are_over_limit(db: FakeDatabase, payments: int, over: int) -> None:
    consumer = await deliver_payments(db, payments, max_in_flight=2)

    assert len(consumer.ledger()) == payments - over
    assert consumer.reasons() == ["over_limit"] * over


async def test_payments_accepted_at_ingress_and_not_finished_count_as_in_flight(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db, max_in_flight=2)).tenant_id
    accepted(db, make_message(tenant_id=tenant))  # in the outbox, not booked
    async with running_consumer(db) as consumer:
        await consumer.deliver(*(direct(make_message(tenant_id=tenant)) for _ in range(2)))

    assert len(consumer.ledger()) == 1
    assert consumer.reasons() == ["over_limit"]


@pytest.mark.parametrize(("payments", "over"), [(60, 0), (61, 1)])
async def test_past_the_publish_rate_the_rest_are_over_limit(db: FakeDatabase, payments: int, over: int) -> None:
    # 1 payment/s: the bucket holds a minute of it, 60 payments.
    consumer = await deliver_payments(db, payments, publish_rate_per_second=1)

    assert len(consumer.ledger()) == payments - over
    assert consumer.reasons() == ["over_limit"] * over


async def test_past_the_byte_rate_the_rest_are_over_limit(db: FakeDatabase) -> None:
    size = len(make_message().to_wire())
    per_second = -(-2 * size // 60)  # a minute of it holds two bodies, not three
    assert 2 * size <= 60 * per_second < 3 * size

    consumer = await deliver_payments(db, 3, publish_bytes_per_second=per_second)

    assert len(consumer.ledger()) == 2
    assert consumer.reasons() == ["over_limit"]


async def test_remits_own_publishes_are_not_charged_again(db: FakeDatabase) -> None:
    consumer = await deliver_payments(db, 61, publish=relayed, publish_rate_per_second=1, max_in_flight=1)

    assert len(consumer.ledger()) == 61
    assert consumer.reasons() == []


async def test_a_suspended_tenants_own_publishes_are_refused_but_accepted_batches_complete(db: FakeDatabase) -> None:
    tenant = (await add_tenant(db, status="suspended")).tenant_id
    own, accepted_before = make_message(tenant_id=tenant), make_message(tenant_id=tenant)
    async with running_consumer(db) as consumer:
        assert await consumer.deliver(direct(own), relayed(accepted_before)) == [True, True]

    assert [r.payment for r in consumer.ledger()] == [accepted_before]
    assert consumer.reasons() == ["tenant_suspended"]

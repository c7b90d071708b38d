"""Sender-selected distribution: RabbitMQ 3.10 routes a `CC` copy of a tenant's message to another
tenant's routing key without checking the topic permission. The copy lands in the other tenant's queue,
but it keeps its publisher's user_id, so identity still decides: it is the attacker's own payment (booked
once, under the attacker) or, naming the victim, a tenant_mismatch filed under the attacker."""

import pytest
from aio_pika.abc import AbstractChannel, AbstractRobustConnection

from app.messaging import headers
from app.messaging.queues import ready_count
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.factories import make_wire_dict
from tests.utils.services import ServiceProcess, eventually
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import dead_letters, fresh_tenant, ledger_rows_for_tenant

pytestmark = pytest.mark.integration


async def test_a_cc_copy_reaches_the_victims_queue_but_moves_only_the_attackers_money(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    tenant_users: TenantUsers,
    consumer: ServiceProcess,
    amqp: AbstractRobustConnection,
) -> None:
    attacker = await fresh_tenant(uow_factory, tier="basic")
    victim = await fresh_tenant(uow_factory, tier="premium")  # another queue: payments.work.premium
    publisher = tenant_users.publisher(attacker)
    own = make_wire_dict(tenant_id=attacker, amount_cents=4_200)
    forged = make_wire_dict(tenant_id=victim, amount_cents=9_900)
    cc = {"CC": [f"{victim}.payment"]}
    await publisher.publish(own, extra_headers=cc)
    await publisher.publish(forged, tenant_header=victim, extra_headers=cc)

    async def settled() -> bool:
        return [r.amount_cents for r in await ledger_rows_for_tenant(uow_factory, attacker)] == [4_200]

    await eventually(settled)
    quarantined = await dead_letters(channel, settings, 2)  # the forged one and its CC copy
    assert {d.headers[headers.REASON] for d in quarantined} == {"tenant_mismatch"}
    assert {d.headers[headers.IDENTITY_TENANT] for d in quarantined} == {attacker}
    assert await ledger_rows_for_tenant(uow_factory, victim) == []
    assert await ready_count(amqp, "payments.work.premium") == 0  # the copies were consumed

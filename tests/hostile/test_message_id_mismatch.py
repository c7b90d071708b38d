"""A tenant's AMQP message_id must name the body's message_id (app/consumer/intake.py): a publisher that labels
one payment with another id (to make a dashboard, a trace or a dead-letter search show the wrong payment)
gets it dead-lettered as invalid, never booked; a spelling of the same id that UUID() reads is the same id."""

import pytest
from aio_pika.abc import AbstractChannel, AbstractIncomingMessage

from app.messaging import headers
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.factories import make_wire_dict, to_wire_bytes
from tests.utils.services import ServiceProcess, eventually
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import fresh_tenant, ledger_count

pytestmark = pytest.mark.integration


async def test_a_payment_labelled_with_another_id_is_dead_lettered_and_its_twin_spelling_is_booked(
    uow_factory: UnitOfWorkFactory,
    channel: AbstractChannel,
    settings: Settings,
    consumer: ServiceProcess,
    tenant_users: TenantUsers,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    publisher = tenant_users.publisher(tenant)
    mislabelled, other = make_wire_dict(tenant_id=tenant), make_wire_dict(tenant_id=tenant)
    await publisher.publish_bytes(to_wire_bytes(mislabelled), message_id=str(other["message_id"]))
    spelled = make_wire_dict(tenant_id=tenant)
    await publisher.publish_bytes(
        to_wire_bytes(spelled), message_id=str(spelled["message_id"]).upper().replace("-", "")
    )

    async def spelled_booked() -> bool:
        return await ledger_count(uow_factory, spelled["message_id"]) == 1

    await eventually(spelled_booked)
    dead_letters = await channel.get_queue(settings.dead_letter_queue)
    dead: list[AbstractIncomingMessage] = []

    async def dead_lettered() -> bool:
        # A batch's failures are routed after its commit: the booked twin can show up first.
        if (message := await dead_letters.get(no_ack=True, fail=False)) is not None:
            dead.append(message)
        return bool(dead)

    await eventually(dead_lettered)
    [dead_letter] = dead
    assert dead_letter.message_id == str(other["message_id"])
    assert dead_letter.headers[headers.REASON] == "invalid"
    assert await ledger_count(uow_factory, mislabelled["message_id"]) == 0
    assert await ledger_count(uow_factory, other["message_id"]) == 0

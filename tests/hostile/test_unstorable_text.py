"""A body whose keys carry NUL: the validation error quotes the key, and PostgreSQL refuses NUL in text.
Found by the hostile-input run: the failure could not be recorded, so the delivery went back to the queue
twenty times until RabbitMQ's delivery limit dead-lettered it. Now it is dead-lettered at once."""

import json

import pytest
from aio_pika.abc import AbstractChannel

from app.messaging import headers
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.factories import make_wire_dict
from tests.utils.services import ServiceProcess
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import attempts_for, dead_letters, fresh_tenant

pytestmark = pytest.mark.integration


async def test_an_error_quoting_a_nul_is_recorded_and_dead_lettered_at_once(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    consumer: ServiceProcess,
    tenant_users: TenantUsers,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant)
    body = json.dumps({**wire, "note\x00": "x"}).encode()
    await tenant_users.publisher(tenant).publish_bytes(body, message_id=str(wire["message_id"]))

    [dead] = await dead_letters(channel, settings, 1)
    assert dead.headers[headers.REASON] == "invalid"
    assert "\x00" not in str(dead.headers[headers.ERROR_MESSAGE])
    [attempt] = await attempts_for(uow_factory, wire["message_id"])  # recorded once: no redelivery loop
    assert (attempt.outcome, attempt.tenant_id) == ("dead_lettered", tenant)
    assert '"level": "ERROR"' not in consumer.log()

"""A direct publisher's `remit-published-at` stamp of NaN or infinity cannot reach the consumer: RabbitMQ
(3.10, whose Erlang floats have neither) closes the publisher's connection with 541 INTERNAL_ERROR.
`headers.published_at` refuses such a stamp anyway (tests/unit/test_published_at.py): one NaN observed would
make a histogram's sum NaN for as long as the consumer runs."""

import pytest
from aiormq.exceptions import AMQPError

from app.messaging import headers
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.factories import make_wire_dict, to_wire_bytes
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import fresh_tenant

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("stamp", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "minus-inf"])
async def test_the_broker_refuses_a_non_finite_stamp(
    uow_factory: UnitOfWorkFactory, tenant_users: TenantUsers, stamp: float
) -> None:
    tenant = await fresh_tenant(uow_factory)
    wire = make_wire_dict(tenant_id=tenant)

    with pytest.raises(AMQPError, match="INTERNAL_ERROR"):
        await tenant_users.publisher(tenant).publish_bytes(
            to_wire_bytes(wire), extra_headers={headers.PUBLISHED_AT: stamp}
        )

"""A tenant reusing one of its own message_ids for another payment: not a duplicate to drop in silence.

The same content again (a redelivery, a retry, a resend with a new timestamp) is a duplicate and is
absorbed. Different content under a used id is dead-lettered as `duplicate_conflict`, never booked under
the first payment's record and never acked away: otherwise the second payment would be lost without a trace.
"""

from typing import Any

import pytest
from aio_pika.abc import AbstractChannel

from app.consumer.committer import Outcome
from app.errors import ConflictingDuplicate
from app.messaging import headers
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from contracts import wire_timestamp
from tests.utils.committer import running_committer
from tests.utils.factories import make_message, make_wire_dict
from tests.utils.services import ServiceProcess, eventually
from tests.utils.tenant_users import TenantUsers
from tests.utils.world import dead_letters, fresh_tenant, ledger_rows_for_tenant

pytestmark = pytest.mark.integration


def _again(wire: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**wire, **changes}


async def test_another_payment_under_a_used_id_is_dead_lettered_not_dropped(
    uow_factory: UnitOfWorkFactory,
    settings: Settings,
    channel: AbstractChannel,
    consumer: ServiceProcess,
    tenant_users: TenantUsers,
) -> None:
    tenant = await fresh_tenant(uow_factory)
    publisher = tenant_users.publisher(tenant)
    first = make_wire_dict(tenant_id=tenant, amount_cents=1_000)
    await publisher.publish(first)

    async def booked() -> bool:
        return len(await ledger_rows_for_tenant(uow_factory, tenant)) == 1

    await eventually(booked)
    resent = _again(first, timestamp_utc=wire_timestamp(make_message().timestamp_utc))  # same payment, new stamp
    other = _again(first, amount_cents=9_999_900)  # another payment under the same id
    await publisher.publish(resent)
    await publisher.publish(other)

    [dead] = await dead_letters(channel, settings, 1)
    assert dead.headers[headers.REASON] == "duplicate_conflict"
    assert "already used" in str(dead.headers[headers.ERROR_MESSAGE])
    assert [r.amount_cents for r in await ledger_rows_for_tenant(uow_factory, tenant)] == [1_000]


async def test_inside_one_flush_the_second_content_is_a_conflict_and_the_same_content_a_duplicate(
    uow_factory: UnitOfWorkFactory, database_url: str
) -> None:
    tenant = await fresh_tenant(uow_factory)
    first = make_message(tenant_id=tenant, amount_cents=500)
    same = first.with_retry()  # a retry of the same payment: retry_count differs, the payment does not
    other = make_message(tenant_id=tenant, message_id=first.message_id, amount_cents=501)
    async with running_committer(database_url) as committer:
        outcomes = await committer.commit_many([first, same, other])
        later = await committer.commit_many([other, same])
    assert outcomes[:2] == [Outcome.PROCESSED, Outcome.DUPLICATE]
    assert isinstance(outcomes[2], ConflictingDuplicate)
    assert isinstance(later[0], ConflictingDuplicate)  # against the committed record, in a later flush
    assert later[1] == Outcome.DUPLICATE
    assert [r.amount_cents for r in await ledger_rows_for_tenant(uow_factory, tenant)] == [500]

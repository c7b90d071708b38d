"""The PostgreSQL repositories and the in-memory fakes the consumer's unit suite runs on answer alike where
the consumer can tell: the claim, the digests, a released record, the ledger's refusal of a second booking,
a discarded transaction, and a tenant's scope. Each scenario runs on both."""

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from asyncpg import PostgresError
from sqlalchemy import select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.consumer.digest import payment_digest
from app.resources import uow_factory_for
from app.storage.db_errors import row_refused, sqlstate
from app.storage.ports.idempotency import CoreTransfer, NewKeyGeneration
from app.storage.tables import processed_messages
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.fakes.database import FakeDatabase
from tests.fakes.unit_of_work import fake_uow_factory
from tests.utils.factories import make_message, new_tenant_id

pytestmark = pytest.mark.integration


@pytest.fixture(params=["postgresql", "in-memory"])
async def uow(
    request: pytest.FixtureRequest, app_engine: AsyncEngine, system_engine: AsyncEngine
) -> AsyncIterator[UnitOfWorkFactory]:
    if request.param == "postgresql":
        yield uow_factory_for(app_engine, system_engine)  # as the service runs: remit_app / remit_system
    else:
        yield fake_uow_factory(FakeDatabase())


async def test_a_claim_records_only_payments_not_recorded_yet(uow: UnitOfWorkFactory) -> None:
    tenant = new_tenant_id()
    first, second = make_message(tenant_id=tenant), make_message(tenant_id=tenant)
    async with uow(tenant) as u:
        assert await u.idempotency.claim([first], [payment_digest(first)]) == {first.message_id}
        await u.commit()

    async with uow(tenant) as u:
        claimed = await u.idempotency.claim([first, second], [b"other", payment_digest(second)])
        digests = await u.idempotency.digests(tenant, [first.message_id])
        await u.commit()

    assert claimed == {second.message_id}
    assert digests == {first.message_id: payment_digest(first)}  # the first claim's, left as it was


async def test_a_released_record_frees_the_id_and_an_uncommitted_claim_leaves_nothing(uow: UnitOfWorkFactory) -> None:
    tenant = new_tenant_id()
    released, discarded = make_message(tenant_id=tenant), make_message(tenant_id=tenant)
    async with uow(tenant) as u:
        await u.idempotency.claim([released], [payment_digest(released)])
        await u.idempotency.release(tenant, [released.message_id])
        await u.commit()
    async with uow(tenant) as u:
        await u.idempotency.claim([discarded], [payment_digest(discarded)])

    async with uow(tenant) as u:
        assert not await u.idempotency.is_recorded(tenant, released.message_id)
        assert not await u.idempotency.is_recorded(tenant, discarded.message_id)


async def test_the_ledger_refuses_a_second_booking_of_a_payment_as_a_row(uow: UnitOfWorkFactory) -> None:
    tenant = new_tenant_id()
    payment = make_message(tenant_id=tenant)
    async with uow(tenant) as u:
        await u.ledger.book([payment])
        await u.commit()

    with pytest.raises((DBAPIError, PostgresError)) as refused:
        async with uow(tenant) as u:
            await u.ledger.book([make_message(tenant_id=tenant), payment])
    assert row_refused(refused.value)
    assert sqlstate(refused.value) == "23505"


async def test_a_tenants_scope_sees_and_writes_only_its_own_rows(uow: UnitOfWorkFactory) -> None:
    ours, theirs = new_tenant_id(), new_tenant_id()
    payment = make_message(tenant_id=theirs)
    async with uow(theirs) as u:
        await u.idempotency.claim([payment], [payment_digest(payment)])
        await u.commit()

    async with uow(ours) as u:
        assert not await u.idempotency.is_recorded(theirs, payment.message_id)
        assert await u.idempotency.digests(theirs, [payment.message_id]) == {}
    with pytest.raises((DBAPIError, PostgresError)) as refused:
        async with uow(ours) as u:
            await u.ledger.book([make_message(tenant_id=theirs)])
    assert sqlstate(refused.value) == "42501"  # the row-level security policy, not a row at fault
    assert not row_refused(refused.value)


async def test_the_cores_transfer_id_is_kept_beside_the_record(
    app_engine: AsyncEngine, system_engine: AsyncEngine
) -> None:
    uow = uow_factory_for(app_engine, system_engine)
    tenant = new_tenant_id()
    payment = make_message(tenant_id=tenant)
    async with uow(tenant) as u:
        await u.idempotency.claim([payment], [payment_digest(payment)])
        booked_at = datetime(2026, 11, 23, 15, 29, 49, 240220, tzinfo=UTC)
        await u.idempotency.record_transfers(tenant, {payment.message_id: CoreTransfer("core-42", booked_at, 2)})
        await u.commit()

    async with uow(tenant) as u:
        pm = processed_messages.c
        query = select(pm.core_transfer_id, pm.core_booked_at, pm.core_key_generation).where(
            pm.message_id == payment.message_id
        )
        assert tuple((await u.connection.execute(query)).one()) == ("core-42", booked_at, 2)


async def test_key_generations_are_the_latest_one_per_payment_of_the_tenant(uow: UnitOfWorkFactory) -> None:
    tenant, other = new_tenant_id(), new_tenant_id()
    opened, untouched = make_message(tenant_id=tenant), make_message(tenant_id=tenant)

    def generation(n: int, tenant_id: str = tenant) -> NewKeyGeneration:
        key = f"{tenant_id}:{opened.message_id}" + ("" if n == 2 else f":{n - 1}")
        return NewKeyGeneration(
            tenant_id, opened.message_id, n, key, "account_closed", "alice", 7, 3, datetime.now(UTC)
        )

    async with uow(tenant) as u:
        assert await u.idempotency.open_key_generation(generation(2))
        assert await u.idempotency.open_key_generation(generation(3))
        await u.commit()
    async with uow(tenant) as u:
        assert not await u.idempotency.open_key_generation(generation(3))  # opened already: the same key
        ids = [opened.message_id, untouched.message_id]
        assert await u.idempotency.key_generations(tenant, ids) == {opened.message_id: 3}
    async with uow(other) as u:  # another tenant's scope sees none of it, even naming the tenant
        assert await u.idempotency.key_generations(tenant, [opened.message_id]) == {}

"""The in-memory unit of work keeps what it commits and nothing else, and sees only its scope's rows, as the
PostgreSQL one does (tests/integration/test_repositories.py holds the real one to the same)."""

import pytest
from sqlalchemy.exc import IntegrityError, ProgrammingError

from app.storage.db_errors import row_refused
from tests.fakes.database import FakeDatabase
from tests.fakes.unit_of_work import FakeUnitOfWork
from tests.utils.factories import make_message, new_tenant_id


async def test_what_is_not_committed_is_discarded() -> None:
    db = FakeDatabase()
    kept, dropped = new_tenant_id(), new_tenant_id()
    async with FakeUnitOfWork(db) as uow:
        await uow.tenants.add(kept, "kept", "basic", 60)
        await uow.commit()
    async with FakeUnitOfWork(db) as uow:
        await uow.tenants.add(dropped, "dropped", "basic", 60)
        assert await uow.tenants.exists(dropped)  # its own writes are visible to it

    async with FakeUnitOfWork(db) as uow:
        assert [t.tenant_id for t in await uow.tenants.all()] == [kept]


async def test_a_tenants_unit_of_work_sees_and_writes_only_that_tenants_rows() -> None:
    db = FakeDatabase()
    ours, theirs = new_tenant_id(), new_tenant_id()
    payment = make_message(tenant_id=theirs)
    async with FakeUnitOfWork(db) as uow:
        await uow.ledger.book([payment])
        await uow.commit()

    async with FakeUnitOfWork(db, ours) as uow:
        with pytest.raises(ProgrammingError):  # 42501: the row-level security policy
            await uow.ledger.book([make_message(tenant_id=theirs)])
        assert not await uow.idempotency.is_recorded(theirs, payment.message_id)


async def test_a_second_booking_of_one_payment_is_refused_as_a_row() -> None:
    db = FakeDatabase()
    payment = make_message()
    async with FakeUnitOfWork(db) as uow:
        await uow.ledger.book([payment])
        await uow.commit()

    async with FakeUnitOfWork(db) as uow:
        with pytest.raises(IntegrityError) as refused:
            await uow.ledger.book([payment])
    assert row_refused(refused.value)


async def test_a_failing_commit_keeps_nothing() -> None:
    db = FakeDatabase(fail_commits=1)
    payment = make_message()
    async with FakeUnitOfWork(db) as uow:
        await uow.ledger.book([payment])
        with pytest.raises(ConnectionError):
            await uow.commit()

    assert db.rows("ledger") == []

"""PostgreSQL itself keeps tenants apart: code scoped to tenant A, even with a query that forgets the
tenant filter, reads none of tenant B's rows and cannot write them. The service role cannot opt out.
(What a hostile caller holding either role can do: tests/hostile/test_database_roles.py.)"""

from pathlib import Path

import pytest
import sqlalchemy.exc
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.publisher.accept import submit_batch
from app.publisher.commands import SubmitBatch
from app.resources import uow_factory_for
from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.world import fresh_tenant, payment_row, write_csv

pytestmark = pytest.mark.integration
TENANT_TABLES = ("batches", "batch_totals", "outbox", "ledger", "processed_messages", "delivery_attempts")


@pytest.fixture(scope="module")
def app_uow(app_engine: AsyncEngine, system_engine: AsyncEngine) -> UnitOfWorkFactory:
    """As the service connects: tenant units of work as remit_app, SYSTEM ones as remit_system."""
    return uow_factory_for(app_engine, system_engine)


async def _two_tenants_with_payments(
    app_uow: UnitOfWorkFactory, owner_uow: UnitOfWorkFactory, tmp: Path
) -> tuple[str, str]:
    a, b = await fresh_tenant(owner_uow), await fresh_tenant(owner_uow)
    for tenant in (a, b):
        path = write_csv(tmp / f"{tenant}.csv", [payment_row(n) for n in range(3)])
        await submit_batch(SubmitBatch(tenant, path), app_uow, Settings())  # as the service does it
    async with owner_uow() as uow:  # what the consumer would have booked
        await uow.connection.execute(
            text(
                "INSERT INTO ledger (message_id, tenant_id, correlation_id, payment_reference, amount_cents, currency, "
                "debtor_bsb, debtor_account, creditor_bsb, creditor_account) "
                "SELECT message_id, tenant_id, correlation_id, payment_reference, amount_cents, currency, "
                "'012-345', '123456789', '033-001', '987654321' FROM outbox WHERE tenant_id IN (:a, :b)"
            ),
            {"a": a, "b": b},
        )
        await uow.commit()
    return a, b


async def test_a_query_without_tenant_filter_sees_only_its_own_tenant(
    app_uow: UnitOfWorkFactory, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    a, b = await _two_tenants_with_payments(app_uow, uow_factory, tmp_path)
    async with app_uow(a) as uow:
        for table in ("batches", "outbox", "ledger"):
            tenants = (await uow.connection.execute(text(f"SELECT DISTINCT tenant_id FROM {table}"))).scalars().all()
            assert tenants == [a], table  # the "bug": no WHERE tenant_id — RLS filters anyway
        stolen = await uow.connection.execute(text("SELECT count(*) FROM ledger WHERE tenant_id = :b"), {"b": b})
        assert stolen.scalar_one() == 0


async def test_a_tenant_scope_cannot_write_another_tenants_rows(
    app_uow: UnitOfWorkFactory, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    a, b = await _two_tenants_with_payments(app_uow, uow_factory, tmp_path)
    async with app_uow(a) as uow:
        updated = await uow.connection.execute(
            text("UPDATE ledger SET amount_cents = 1 WHERE tenant_id = :b"), {"b": b}
        )
        deleted = await uow.connection.execute(text("DELETE FROM outbox WHERE tenant_id = :b"), {"b": b})
        assert (updated.rowcount, deleted.rowcount) == (0, 0)
    with pytest.raises(sqlalchemy.exc.DBAPIError, match="row-level security"):
        async with app_uow(a) as uow:
            await uow.connection.execute(
                text(
                    "INSERT INTO processed_messages (message_id, tenant_id, correlation_id, attempt) "
                    "VALUES (gen_random_uuid(), :b, 'forged', 1)"
                ),
                {"b": b},
            )
    async with uow_factory() as owner:
        amounts = await owner.connection.execute(
            text("SELECT count(*) FROM ledger WHERE tenant_id = :b AND amount_cents = 1"), {"b": b}
        )
        assert amounts.scalar_one() == 0


async def test_the_service_role_cannot_bypass_row_level_security(
    app_engine: AsyncEngine, app_uow: UnitOfWorkFactory
) -> None:
    async with app_engine.connect() as conn:
        role = (
            await conn.execute(text("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"))
        ).one()
        assert tuple(role) == (False, False)
        for table in TENANT_TABLES:  # outside a unit of work there is no scope: nothing is visible
            assert (await conn.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one() == 0, table
    async with app_uow("anyone") as uow:
        await uow.connection.execute(text("SET LOCAL row_security = off"))
        with pytest.raises(sqlalchemy.exc.DBAPIError, match="row-level security"):
            await uow.connection.execute(text("SELECT count(*) FROM ledger"))


async def test_the_system_scope_sees_every_tenant(
    app_uow: UnitOfWorkFactory, uow_factory: UnitOfWorkFactory, tmp_path: Path
) -> None:
    a, b = await _two_tenants_with_payments(app_uow, uow_factory, tmp_path)
    async with app_uow() as uow:  # on remit_system
        assert (await uow.connection.execute(text("SELECT current_user"))).scalar_one() == "remit_system"
        seen = await uow.connection.execute(
            text("SELECT DISTINCT tenant_id FROM ledger WHERE tenant_id IN (:a, :b) ORDER BY 1"), {"a": a, "b": b}
        )
        assert seen.scalars().all() == sorted([a, b])

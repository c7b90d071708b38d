"""The consumer's copy of the tenants' limits and status, on real PostgreSQL: read once per refresh period,
a tenant it has not seen looked up at once, a missing one not looked up again until the next full read."""

import pytest
from sqlalchemy import text

from app.storage.ports.tenants import TenantLimits
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.directory import TenantDirectory
from app.tenancy.tenants import AddTenant, add_tenant
from tests.utils.factories import new_tenant_id
from tests.utils.world import fresh_tenant

pytestmark = pytest.mark.integration


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _set_rate(uow: UnitOfWorkFactory, tenant: str, rate: int) -> None:
    async with uow() as u:
        await u.connection.execute(
            text("UPDATE tenants SET publish_rate_per_second = :r WHERE tenant_id = :t"), {"r": rate, "t": tenant}
        )
        await u.commit()


async def test_a_change_reaches_the_copy_at_the_next_full_read(uow_factory: UnitOfWorkFactory) -> None:
    clock = Clock()
    directory = TenantDirectory(uow_factory, refresh_seconds=5.0, clock=clock)
    tenant = await fresh_tenant(uow_factory)
    limits = (await directory.limits([tenant]))[tenant]
    assert limits == TenantLimits(tenant, "active", 65_536, 1000, 10_000_000, 100_000, 1_073_741_824)
    assert limits.active

    await _set_rate(uow_factory, tenant, 7)
    clock.now += 4.9
    assert (await directory.limits([tenant]))[tenant].publish_rate_per_second == 1000
    clock.now += 0.1
    assert (await directory.limits([tenant]))[tenant].publish_rate_per_second == 7


async def test_a_new_tenant_is_looked_up_at_once_and_a_missing_one_once_per_read(
    uow_factory: UnitOfWorkFactory,
) -> None:
    clock = Clock()
    directory = TenantDirectory(uow_factory, refresh_seconds=5.0, clock=clock)
    await directory.limits([])
    added = await fresh_tenant(uow_factory)
    assert added in await directory.limits([added])  # added after the full read, found at once

    missing = new_tenant_id()
    assert missing not in await directory.limits([missing])
    await add_tenant(AddTenant(missing, "Added late", default_ttl_seconds=86_400), uow_factory)
    assert missing not in await directory.limits([missing])  # known to be absent until the next full read
    clock.now += 5.0
    assert missing in await directory.limits([missing])

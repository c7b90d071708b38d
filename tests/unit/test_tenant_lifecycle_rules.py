"""The rules of a tenant's life that need no broker: what a repeated add differs in, why ingress refuses a
tenant that is not active, when phase 2 of a deletion may run, when the purge erases a deleted tenant, and
the default tenant of a one-customer install."""

from datetime import UTC, datetime, timedelta

import pytest

from app.deadletters.retention import purge_expired_records
from app.errors import TenantNotDrained, UsageError, exit_code, http_status
from app.storage.ports.tenants import Drain, InFlight
from app.tenancy.deletion import refuse_unsettled
from app.tenancy.tenants import AddTenant, differences, refusal, tenant_or_default
from tests.fakes.database import FakeDatabase
from tests.fakes.unit_of_work import fake_uow_factory
from tests.utils.policies import retention_policy

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


async def _tenant(db: FakeDatabase, tenant: str, **values: object) -> None:
    async with fake_uow_factory(db)() as uow:
        await uow.tenants.add(tenant, f"Tenant {tenant}", "basic", 86_400)
        await uow.tenants.update(tenant, **values)
        await uow.commit()


async def test_a_repeated_add_differs_only_in_what_it_names() -> None:
    db = FakeDatabase()
    await _tenant(db, "anz")
    async with fake_uow_factory(db)() as uow:
        row = await uow.tenants.get("anz")
    assert row is not None
    assert differences(row, AddTenant("anz", "Tenant anz")) == {}  # tier and TTL not given: not compared
    assert differences(row, AddTenant("anz", "ANZ", "premium", default_ttl_seconds=3600)) == {
        "name": ("Tenant anz", "ANZ"),
        "tier": ("basic", "premium"),
        "default_ttl_seconds": (86_400, 3600),
    }


def test_ingress_says_why_a_tenant_that_is_not_active_is_refused() -> None:
    assert refusal("anz", "suspended") == "tenant 'anz' is suspended until an operator resumes it; nothing was accepted"
    assert "is being deleted" in refusal("anz", "draining")
    assert refusal("anz", "deleted") == "tenant 'anz' was deleted; nothing was accepted"


def test_phase_two_is_refused_while_anything_is_unsettled_and_says_how_much() -> None:
    refuse_unsettled("anz", Drain(InFlight(0, 0), 0, 0), 0)
    with pytest.raises(TenantNotDrained) as refused:
        refuse_unsettled("anz", Drain(InFlight(3, 1800), 1, 2), 4)
    assert str(refused.value).startswith(
        "tenant 'anz' still has 3 payment(s) in flight, 1 not yet published, 2 waiting to be retried, "
        "4 message(s) in its dedicated queue: not deleted"
    )
    assert exit_code(refused.value) == 75  # the same command may work later
    assert http_status(refused.value) == 409
    with pytest.raises(TenantNotDrained, match="1 payment"):
        refuse_unsettled("anz", Drain(InFlight(1, 500), 0, 0), 0)


async def test_the_purge_erases_a_deleted_tenant_once_its_retention_has_passed_since_the_deletion() -> None:
    db = FakeDatabase()
    await _tenant(db, "gone", status="deleted", deleted_at=NOW - timedelta(days=31))
    await _tenant(db, "recent", status="deleted", deleted_at=NOW - timedelta(days=29))
    await _tenant(db, "keeper", status="deleted", deleted_at=NOW - timedelta(days=31), retention_days=90)
    await _tenant(db, "alive")

    dry = await purge_expired_records(fake_uow_factory(db), retention_policy(), dry_run=True, now=NOW)
    assert dry.deleted["deleted_tenants"] == 1
    assert set(db.tables["tenants"]) == {"gone", "recent", "keeper", "alive"}

    report = await purge_expired_records(fake_uow_factory(db), retention_policy(), now=NOW)
    assert report.deleted["deleted_tenants"] == 1
    assert report.erased == {"tenants": 1}
    assert set(db.tables["tenants"]) == {"recent", "keeper", "alive"}


def test_submit_without_a_tenant_uses_the_installs_default_tenant() -> None:
    assert tenant_or_default("anz", "solo") == "anz"
    assert tenant_or_default(None, "solo") == "solo"
    with pytest.raises(UsageError, match="--tenant, or set REMIT_DEFAULT_TENANT"):
        tenant_or_default(None, None)
    with pytest.raises(UsageError, match="not valid"):
        tenant_or_default(None, "Not A Tenant")

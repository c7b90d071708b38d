"""Tenant records. (Tiers, limits and broker provisioning grow here.)"""

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.dialects.postgresql import insert

from app.errors import UsageError
from app.storage.tables import tenants
from app.storage.unit_of_work import UnitOfWorkFactory
from contracts.message import TENANT_ID_PATTERN

TIERS = ("free", "basic", "premium", "enterprise")


@dataclass(frozen=True, slots=True)
class AddTenant:
    tenant_id: str
    name: str
    tier: str = "basic"
    default_ttl_seconds: int = 86_400


def check_tenant_id(tenant_id: str) -> str:
    if not re.fullmatch(TENANT_ID_PATTERN, tenant_id):
        raise UsageError(
            f"tenant id {tenant_id!r} is not valid: use 2-32 lower-case letters, digits, '_' or '-', "
            "starting with a letter or digit (it becomes part of routing keys)"
        )
    return tenant_id


async def add_tenant(command: AddTenant, uow_factory: UnitOfWorkFactory) -> bool:
    """Create the tenant; return False if it already existed (adding is idempotent)."""
    check_tenant_id(command.tenant_id)
    if command.tier not in TIERS:
        raise UsageError(f"tier {command.tier!r} is not one of {', '.join(TIERS)}")
    async with uow_factory() as uow:
        result = await uow.connection.execute(
            insert(tenants)
            .values(
                tenant_id=command.tenant_id,
                name=command.name,
                tier=command.tier,
                default_ttl_seconds=command.default_ttl_seconds,
            )
            .on_conflict_do_nothing(index_elements=["tenant_id"])
        )
        await uow.commit()
    return bool(result.rowcount)


async def list_tenants(uow_factory: UnitOfWorkFactory) -> list[Row[Any]]:
    async with uow_factory() as uow:
        return list((await uow.connection.execute(select(tenants).order_by(tenants.c.tenant_id))).all())

"""Tenant records: adding one, comparing a repeated add with what exists, listing them."""

import re
from dataclasses import dataclass, field

from app.errors import UsageError
from app.storage.ports.tenants import Tenant
from app.storage.unit_of_work import UnitOfWorkFactory
from contracts.message import TENANT_ID_PATTERN

TIERS = ("free", "basic", "premium", "enterprise")


@dataclass(frozen=True, slots=True)
class AddTenant:
    """None: not given. A new tenant then gets tier basic and the service's default TTL; an existing tenant is
    compared only on what was given."""

    tenant_id: str
    name: str
    tier: str | None = None
    default_ttl_seconds: int | None = field(default=None, kw_only=True)


def check_tenant_id(tenant_id: str) -> str:
    if not re.fullmatch(TENANT_ID_PATTERN, tenant_id):
        raise UsageError(
            f"tenant id {tenant_id!r} is not valid: use 2-32 lower-case letters, digits, '_' or '-', "
            "starting with a letter or digit (it becomes part of routing keys)"
        )
    return tenant_id


async def add_tenant(command: AddTenant, uow_factory: UnitOfWorkFactory) -> bool:
    """Create the tenant; return False if it already existed (left as it is: see `differences`)."""
    check_tenant_id(command.tenant_id)
    tier = command.tier or "basic"
    if tier not in TIERS:
        raise UsageError(f"tier {tier!r} is not one of {', '.join(TIERS)}")
    if command.default_ttl_seconds is None:
        raise UsageError("a new tenant needs its default time-to-live (REMIT_DEFAULT_TTL_SECONDS)")
    async with uow_factory() as uow:
        created = await uow.tenants.add(command.tenant_id, command.name, tier, command.default_ttl_seconds)
        await uow.commit()
    return created


def differences(row: Tenant, asked: AddTenant) -> dict[str, tuple[object, object]]:
    """What an add asked for that the existing tenant does not have: column -> (now, asked)."""
    wanted = {"name": asked.name, "tier": asked.tier, "default_ttl_seconds": asked.default_ttl_seconds}
    return {
        column: (getattr(row, column), value)
        for column, value in wanted.items()
        if value is not None and getattr(row, column) != value
    }


async def list_tenants(uow_factory: UnitOfWorkFactory) -> list[Tenant]:
    async with uow_factory() as uow:
        return await uow.tenants.all()


def tenant_or_default(given: str | None, default: str | None) -> str:
    """The tenant named, else the install's default tenant (REMIT_DEFAULT_TENANT), checked either way."""
    tenant = given or default
    if tenant is None:
        raise UsageError("name the tenant with --tenant, or set REMIT_DEFAULT_TENANT on an install with one customer")
    return check_tenant_id(tenant)


_WHY_REFUSED = {
    "suspended": "is suspended until an operator resumes it",
    "draining": "is being deleted: it drains what it had accepted and takes nothing new",
    "deleted": "was deleted",
}


def refusal(tenant_id: str, status: str) -> str:
    """Why ingress refuses a batch of a tenant that is not active."""
    return f"tenant {tenant_id!r} {_WHY_REFUSED.get(status, f'is {status}')}; nothing was accepted"

"""The one way the admin side reaches the database for a caller: a unit-of-work factory bound to it.

Every query made on behalf of a caller goes through `uow_for(engine, caller.tenant_id)`. For a tenant
caller every unit of work runs in that tenant's row-level-security scope, whatever scope the service
function asks for (it cannot widen to SYSTEM or to another tenant). For an admin (None) the service
function's own choice stands: SYSTEM by default, which sees every tenant.
"""

from sqlalchemy.ext.asyncio import AsyncEngine

from app.storage.unit_of_work import SYSTEM, SqlUnitOfWork, UnitOfWork, UnitOfWorkFactory


def uow_for(engine: AsyncEngine, tenant: str | None) -> UnitOfWorkFactory:
    def factory(tenant_id: str | None = SYSTEM) -> UnitOfWork:
        return SqlUnitOfWork(engine, tenant_id if tenant is None else tenant)

    return factory

"""The one way the admin side reaches the database for a caller: a unit-of-work factory bound to it.

Every query made on behalf of a caller goes through `uow_for(database.uow, caller.tenant_id)`. For a tenant
caller every unit of work runs in that tenant's row-level-security scope, on the tenant role (remit_app),
whatever scope the service function asks for (it cannot widen to SYSTEM or to another tenant). For an admin
(None) the service function's own choice stands: SYSTEM by default, on the system role, which sees every
tenant.
"""

from app.storage.unit_of_work import SYSTEM, UnitOfWork, UnitOfWorkFactory


def uow_for(base: UnitOfWorkFactory, tenant: str | None) -> UnitOfWorkFactory:
    def factory(tenant_id: str | None = SYSTEM) -> UnitOfWork:
        return base(tenant_id if tenant is None else tenant)

    return factory

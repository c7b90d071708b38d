"""Is the tenant or batch a filter names known in the caller's scope? Every entry point that filters by them
(`remit dlq`, `status`, `report`, `trace`, `queues`, and their HTTP counterparts) asks here, so a misspelled
value is an error naming the known ones ("did you mean"), never an empty answer. Known values come only
from the caller's scope: another tenant's batch is unknown in a tenant's scope, like a missing one."""

from app.deadletters.query import DeadLetterFilter
from app.storage.unit_of_work import UnitOfWork, UnitOfWorkFactory
from app.unknown_values import unknown_value

KNOWN_SHOWN = 50  # recent batches offered when a batch filter names none of them


async def check_tenant(uow: UnitOfWork, tenant: str, dash: str = "") -> None:
    if await uow.tenants.exists(tenant):
        return
    filed = await uow.dead_letters.recent_values("tenant", None, 1000)  # dead letters of a removed tenant
    if tenant not in filed:
        known = sorted({t.tenant_id for t in await uow.tenants.all()} | set(filed))
        raise unknown_value(f"{dash}tenant", tenant, known, "a tenant")


async def check_batch(
    uow: UnitOfWork, batch: str, tenant: str | None, dash: str = "", files_only: bool = False
) -> None:
    """Known: a submitted batch, or (unless `files_only`) a correlation_id direct publishes named."""
    if await uow.batch_reports.batches([batch], tenant):
        return
    if not files_only and (
        await uow.dead_letters.newest(DeadLetterFilter(tenant=tenant, batch=batch), 1)
        or any(tenant in (None, row.tenant_id) for row in await uow.batch_reports.summary([batch]))
    ):
        return
    recent = await uow.batch_reports.recent(tenant, KNOWN_SHOWN, with_direct=not files_only)
    if not files_only:
        recent += await uow.dead_letters.recent_values("batch", tenant, KNOWN_SHOWN)
    scope = f" of tenant {tenant}" if tenant else ""
    raise unknown_value(f"{dash}batch", batch, list(dict.fromkeys(recent)), f"a batch{scope}")


async def check_known(
    uow_factory: UnitOfWorkFactory,
    tenant: str | None,
    batches: list[str] | tuple[str, ...] = (),
    dash: str = "",
    files_only: bool = False,
) -> None:
    """Raise UsageError for the first of `tenant` and `batches` (batches within `tenant`) nobody knows."""
    if tenant is None and not batches:
        return
    async with uow_factory() as uow:  # the caller's own scope (an HTTP caller's factory fixes it)
        if tenant is not None:
            await check_tenant(uow, tenant, dash)
        for batch in batches:
            await check_batch(uow, batch, tenant, dash, files_only)

"""Per batch and currency: what was accepted, rejected at validation, processed, dead-lettered, in flight."""

from collections.abc import Sequence

from app.storage.ports.batch_reports import SummaryRow as SummaryRow
from app.storage.unit_of_work import UnitOfWorkFactory


async def batch_summary(uow_factory: UnitOfWorkFactory, correlation_ids: Sequence[str]) -> list[SummaryRow]:
    async with uow_factory() as uow:
        return await uow.batch_reports.summary(correlation_ids)


async def recent_batches(
    uow_factory: UnitOfWorkFactory, tenant_id: str | None, limit: int, with_direct: bool = False
) -> list[str]:
    async with uow_factory() as uow:
        return await uow.batch_reports.recent(tenant_id, limit, with_direct)

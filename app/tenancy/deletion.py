"""Deleting a tenant, in two phases, without losing a payment or the records that account for it.

Phase 1 (`remit tenants delete T`): the tenant is `draining`. Ingress refuses its batches and its RabbitMQ
user loses every right (its open connections are closed), so it can publish nothing more; what it had
accepted is still published by the relay and processed by the consumers through its binding, which stays.
Phase 2 (`remit tenants delete T --confirm`), once nothing is in flight: its binding, its dedicated queue and
its RabbitMQ user are removed, its API keys revoked, and it is `deleted`. Refused while anything is
unsettled, saying how much.

Its ledger rows, processed records, dead letters, attempts and audit trail stay, for the retention (its own
retention_days, else REMIT_RETENTION_DAYS) counted from the deletion: `remit purge` erases them, and the
tenant's record, once it has passed. Until then its id cannot be reused.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from app.errors import Conflict, TenantNotDrained
from app.storage.ports.tenants import DELETED, DRAINING, Drain, Tenant
from app.storage.unit_of_work import UnitOfWorkFactory


@dataclass(frozen=True, slots=True)
class Deletion:
    tenant: Tenant  # as it is now: draining or deleted
    drain: Drain | None  # what was still unsettled when phase 1 ran (None once deleted)
    queued: int  # messages in its dedicated queue (0 without one)
    removed_users: tuple[str, ...] = ()
    revoked_keys: int = 0  # its API keys, revoked by phase 2
    kept_until: datetime | None = None  # when `remit purge` may erase its records

    @property
    def deleted(self) -> bool:
        return self.tenant.status == DELETED


def kept_until(tenant: Tenant, default_days: int) -> datetime | None:
    if tenant.deleted_at is None:
        return None
    return tenant.deleted_at + timedelta(days=tenant.retention_days or default_days)


def refuse_unsettled(tenant_id: str, drain: Drain, queued: int) -> None:
    """Phase 2 may run only once nothing of the tenant is left to process."""
    if drain.settled and not queued:
        return
    parts = [f"{drain.in_flight.payments} payment(s) in flight"]
    if drain.unpublished:
        parts.append(f"{drain.unpublished} not yet published")
    if drain.retrying:
        parts.append(f"{drain.retrying} waiting to be retried")
    if queued:
        parts.append(f"{queued} message(s) in its dedicated queue")
    raise TenantNotDrained(
        f"tenant {tenant_id!r} still has {', '.join(parts)}: not deleted. It is draining (nothing new is "
        "accepted); ask again once they are processed or dead-lettered"
    )


def refuse_if_gone(tenant: Tenant, default_days: int) -> None:
    """A tenant being deleted, or deleted, can no longer be changed (resume cancels a deletion in phase 1)."""
    if tenant.status == DELETED:
        until = kept_until(tenant, default_days)
        raise Conflict(
            f"tenant {tenant.tenant_id!r} was deleted on {tenant.deleted_at:%Y-%m-%d}; its records are kept until "
            f"{until:%Y-%m-%d}, when the purge erases them and its id may be used again"
        )


def refuse_if_draining(tenant: Tenant) -> None:
    if tenant.status == DRAINING:
        raise Conflict(
            f"tenant {tenant.tenant_id!r} is being deleted (draining); resume it first to cancel the deletion"
        )


@dataclass(frozen=True, slots=True)
class Erasure:
    tenants: list[str]  # the deleted tenants whose retention has passed
    rows: dict[str, int]  # rows erased per table, theirs (none on a dry run)


async def erase_deleted_tenants(
    uow_factory: UnitOfWorkFactory, default_days: int, now: datetime, *, dry_run: bool = False
) -> Erasure:
    """Erase every row of each tenant deleted longer ago than its retention, and its record; one tenant per
    transaction."""
    async with uow_factory() as uow:
        due = [t.tenant_id for t in await uow.tenants.all() if (k := kept_until(t, default_days)) and k <= now]
    rows: dict[str, int] = {}
    for tenant_id in [] if dry_run else due:
        async with uow_factory() as uow:
            for table, count in (await uow.tenants.erase(tenant_id)).items():
                rows[table] = rows.get(table, 0) + count
            await uow.commit()
    return Erasure(due, {table: n for table, n in rows.items() if n})

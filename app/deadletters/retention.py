"""Retention: idempotency records, attempt records and closed dead letters are deleted after N days.

Safe while the service runs: rows go in small batches, each its own short transaction, picked by
ctid so every batch is one index range scan and one TID scan. The retention must outlive every way a
message_id can come back (its TTL, the longest retry delay, the replay window): a processed record
purged earlier would let a late copy pay twice. Open dead letters are never purged, nor the attempt
history of a message that still has an open dead letter. The audit trail is kept.

A deleted tenant (`remit tenants delete --confirm`) is erased whole, every table and its record, once its
retention has passed since its deletion (app/tenancy/deletion.py).
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from app.errors import RetentionTooShort, UnknownTenant
from app.storage.ports.expired_records import RECORD_KINDS, Cutoff, RecordKind
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.deletion import erase_deleted_tenants


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """From Settings (app/bootstrap.py: retention_policy)."""

    days: int  # for tenants without their own
    replay_window_days: int
    retry_delays_seconds: tuple[float, ...]
    default_ttl_seconds: int
    batch_size: int  # rows per short transaction

    def minimum(self, ttl_seconds: int) -> timedelta:
        longest_delay = max(self.retry_delays_seconds, default=0.0)
        return timedelta(seconds=ttl_seconds + longest_delay, days=self.replay_window_days)


def check_retention(days: int, ttl_seconds: int, policy: RetentionPolicy, whose: str) -> None:
    needed = policy.minimum(ttl_seconds)
    if timedelta(days=days) < needed:
        at_least = needed.days + (1 if needed % timedelta(days=1) else 0)
        raise RetentionTooShort(
            f"{whose} retention of {days} days is shorter than TTL ({ttl_seconds}s) + longest retry delay "
            f"({max(policy.retry_delays_seconds, default=0.0):g}s) + replay window ({policy.replay_window_days} "
            f"days): a late copy of a purged message could pay twice. Use at least {at_least} days"
        )


@dataclass(slots=True)
class PurgeReport:
    days: int
    tenant_days: dict[str, int]
    dry_run: bool
    deleted: dict[str, int] = field(default_factory=dict)
    erased: dict[str, int] = field(default_factory=dict)  # rows per table of the deleted tenants erased whole


async def purge_expired_records(
    uow_factory: UnitOfWorkFactory, policy: RetentionPolicy, *, dry_run: bool = False, now: datetime | None = None
) -> PurgeReport:
    """Delete (or with dry_run, count) what is past retention, in batches of policy.batch_size."""
    now = now or datetime.now(UTC)
    tenant_days = await _checked_retentions(uow_factory, policy)
    cutoff = Cutoff(now, now - timedelta(days=min([policy.days, *tenant_days.values()])), policy.days)
    report = PurgeReport(policy.days, tenant_days, dry_run)
    for kind in RECORD_KINDS:
        if dry_run:
            async with uow_factory() as uow:
                report.deleted[kind] = await uow.expired.count(kind, cutoff)
        else:
            report.deleted[kind] = await _delete_in_batches(uow_factory, kind, cutoff, policy.batch_size)
    erased = await erase_deleted_tenants(uow_factory, policy.days, now, dry_run=dry_run)
    report.deleted["deleted_tenants"] = len(erased.tenants)
    report.erased = erased.rows
    return report


async def _checked_retentions(uow_factory: UnitOfWorkFactory, policy: RetentionPolicy) -> dict[str, int]:
    """Every tenant's own retention, after checking it and the default against that tenant's TTL."""
    check_retention(policy.days, policy.default_ttl_seconds, policy, "the default")
    async with uow_factory() as uow:
        tenants = await uow.tenants.all()
    own = {}
    for tenant in tenants:
        days, whose = tenant.retention_days, f"tenant {tenant.tenant_id}'s"
        if days is None:
            whose = f"the default (used by tenant {tenant.tenant_id})"
        check_retention(days or policy.days, tenant.default_ttl_seconds, policy, whose)
        if days is not None:
            own[tenant.tenant_id] = days
    return own


async def _delete_in_batches(uow_factory: UnitOfWorkFactory, kind: RecordKind, cutoff: Cutoff, batch_size: int) -> int:
    total = 0
    while True:
        async with uow_factory() as uow:
            deleted = await uow.expired.delete(kind, cutoff, batch_size)
            await uow.commit()
        total += deleted
        if deleted < batch_size:
            return total


async def set_tenant_retention(
    uow_factory: UnitOfWorkFactory, tenant_id: str, days: int | None, policy: RetentionPolicy
) -> None:
    """Give a tenant its own retention (None: back to the default), refusing one that is too short."""
    async with uow_factory() as uow:
        tenant = await uow.tenants.get(tenant_id)
        if tenant is None:
            raise UnknownTenant(f"no tenant {tenant_id}; `remit tenants list` shows them")
        if days is not None:
            check_retention(days, tenant.default_ttl_seconds, policy, f"tenant {tenant_id}'s")
        await uow.tenants.update(tenant_id, retention_days=days)
        await uow.commit()

"""Retention: idempotency records, attempt records and closed dead letters are deleted after N days.

Safe while the service runs: rows go in small batches, each its own short transaction, picked by
ctid so every batch is one index range scan and one TID scan. The retention must outlive every way a
message_id can come back (its TTL, the longest retry delay, the replay window): a processed record
purged earlier would let a late copy pay twice. Open dead letters are never purged, nor the attempt
history of a message that still has an open dead letter. The audit trail is kept.
"""

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, select, text, update
from sqlalchemy.types import DateTime, Integer

from app.deadletters.errors import RetentionTooShort
from app.errors import UsageError
from app.storage.tables import tenants
from app.storage.unit_of_work import UnitOfWorkFactory

DEFAULT_RETENTION_DAYS = 30
DEFAULT_REPLAY_WINDOW_DAYS = 7
DEFAULT_BATCH_SIZE = 1000


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    days: int = DEFAULT_RETENTION_DAYS
    replay_window_days: int = DEFAULT_REPLAY_WINDOW_DAYS
    retry_delays_seconds: tuple[float, ...] = (1.0, 5.0, 30.0)
    default_ttl_seconds: int = 86_400
    batch_size: int = DEFAULT_BATCH_SIZE

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


# One statement per kind of record. :bound is the oldest cutoff of any tenant, an index-friendly
# prefilter; the per-tenant cutoff (tenants.retention_days or the default) decides.
_SELECTIONS = {
    "processed_messages": """
        SELECT p.ctid FROM processed_messages p LEFT JOIN tenants t ON t.tenant_id = p.tenant_id
        WHERE p.processed_at < :bound
          AND p.processed_at < :now - make_interval(days => COALESCE(t.retention_days, :days))
    """,
    "delivery_attempts": """
        SELECT a.ctid FROM delivery_attempts a LEFT JOIN tenants t ON t.tenant_id = a.tenant_id
        WHERE a.at < :bound
          AND a.at < :now - make_interval(days => COALESCE(t.retention_days, :days))
          AND NOT EXISTS (
              SELECT 1 FROM dead_letters d WHERE d.message_id = a.message_id AND d.status = 'open')
    """,
    "dead_letters": """
        SELECT d.ctid FROM dead_letters d LEFT JOIN tenants t ON t.tenant_id = d.tenant_id
        WHERE d.status IN ('replayed', 'resolved', 'discarded')
          AND d.status_changed_at < :bound
          AND d.status_changed_at < :now - make_interval(days => COALESCE(t.retention_days, :days))
    """,
}


@dataclass(slots=True)
class PurgeReport:
    days: int
    tenant_days: dict[str, int]
    dry_run: bool
    deleted: dict[str, int] = field(default_factory=dict)


async def purge_expired_records(
    uow_factory: UnitOfWorkFactory, policy: RetentionPolicy, *, dry_run: bool = False, now: datetime | None = None
) -> PurgeReport:
    """Delete (or with dry_run, count) what is past retention, in batches of policy.batch_size."""
    now = now or datetime.now(UTC)
    tenant_days = await _checked_retentions(uow_factory, policy)
    bound = now - timedelta(days=min([policy.days, *tenant_days.values()]))
    report = PurgeReport(policy.days, tenant_days, dry_run)
    params = {"now": now, "bound": bound, "days": policy.days}
    for table, selection in _SELECTIONS.items():
        if dry_run:
            report.deleted[table] = await _count(uow_factory, selection, params)
        else:
            report.deleted[table] = await _delete_in_batches(uow_factory, table, selection, params, policy.batch_size)
    return report


async def _checked_retentions(uow_factory: UnitOfWorkFactory, policy: RetentionPolicy) -> dict[str, int]:
    """Every tenant's own retention, after checking it and the default against that tenant's TTL."""
    check_retention(policy.days, policy.default_ttl_seconds, policy, "the default")
    query = select(tenants.c.tenant_id, tenants.c.default_ttl_seconds, tenants.c.retention_days)
    async with uow_factory() as uow:
        rows = (await uow.connection.execute(query)).all()
    own = {}
    for tenant_id, ttl, days in rows:
        whose = f"tenant {tenant_id}'s" if days is not None else f"the default (used by tenant {tenant_id})"
        check_retention(days or policy.days, ttl, policy, whose)
        if days is not None:
            own[tenant_id] = days
    return own


def _bind(sql: str) -> Any:
    return text(sql).bindparams(
        bindparam("now", type_=DateTime(timezone=True)),
        bindparam("bound", type_=DateTime(timezone=True)),
        bindparam("days", type_=Integer),
    )


async def _count(uow_factory: UnitOfWorkFactory, selection: str, params: dict[str, Any]) -> int:
    async with uow_factory() as uow:
        return int((await uow.connection.execute(_bind(f"SELECT count(*) FROM ({selection}) s"), params)).scalar_one())


async def _delete_in_batches(
    uow_factory: UnitOfWorkFactory, table: str, selection: str, params: dict[str, Any], batch_size: int
) -> int:
    statement = _bind(f"DELETE FROM {table} WHERE ctid = ANY(ARRAY({selection} LIMIT :limit))").bindparams(
        bindparam("limit", type_=Integer)
    )
    total = 0
    while True:
        async with uow_factory() as uow:
            deleted = (await uow.connection.execute(statement, {**params, "limit": batch_size})).rowcount
            await uow.commit()
        total += deleted
        if deleted < batch_size:
            return total


async def set_tenant_retention(
    uow_factory: UnitOfWorkFactory, tenant_id: str, days: int | None, policy: RetentionPolicy
) -> None:
    """Give a tenant its own retention (None: back to the default), refusing one that is too short."""
    async with uow_factory() as uow:
        query = select(tenants.c.default_ttl_seconds).where(tenants.c.tenant_id == tenant_id)
        ttl = (await uow.connection.execute(query)).scalar_one_or_none()
        if ttl is None:
            raise UsageError(f"no tenant {tenant_id}; `remit tenants list` shows them")
        if days is not None:
            check_retention(days, ttl, policy, f"tenant {tenant_id}'s")
        await uow.connection.execute(
            update(tenants).where(tenants.c.tenant_id == tenant_id).values(retention_days=days)
        )
        await uow.commit()

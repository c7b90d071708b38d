"""Tenants in PostgreSQL."""

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.ports.tenants import Drain, InFlight, Tenant, TenantLimits
from app.storage.tables import api_keys, tenants

tc = tenants.c
_LIMITS = (
    tc.tenant_id,
    tc.status,
    tc.max_message_bytes,
    tc.publish_rate_per_second,
    tc.publish_bytes_per_second,
    tc.max_in_flight,
    tc.max_bytes_in_flight,
)
_UNSETTLED = """
    NOT EXISTS (SELECT 1 FROM ledger l WHERE l.tenant_id = {a}.tenant_id AND l.message_id = {a}.message_id)
    AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.tenant_id = {a}.tenant_id AND d.message_id = {a}.message_id)
"""
_IN_FLIGHT = text(
    f"""
    SELECT count(*), COALESCE(sum(octet_length(o.body)), 0) FROM outbox o
    WHERE o.tenant_id = :tenant AND o.expires_at > :now AND o.correlation_id IS DISTINCT FROM CAST(:batch AS text)
      AND {_UNSETTLED.format(a="o")}
    """
)
_UNPUBLISHED = text("SELECT count(*) FROM outbox WHERE tenant_id = :tenant AND published_at IS NULL")
_RETRYING = text(
    f"""
    SELECT count(DISTINCT a.message_id) FROM delivery_attempts a
    WHERE a.tenant_id = :tenant AND a.outcome = 'retrying' AND {_UNSETTLED.format(a="a")}
    """
)
# A deleted tenant's rows, children before parents (batches, api_keys and tenants are referenced).
_ERASED_TABLES = (
    "dead_letter_audit",
    "dead_letter_replay_requests",
    "dead_letters",
    "delivery_attempts",
    "processed_messages",
    "transfer_key_generations",
    "ledger",
    "reconciliation_breaks",
    "outbox",
    "batch_rejections",
    "batch_totals",
    "batches",
    "api_keys",
    "rate_buckets",
    "tenants",
)


class SqlTenants:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def add(self, tenant_id: str, name: str, tier: str, default_ttl_seconds: int) -> bool:
        statement = (
            insert(tenants)
            .values(tenant_id=tenant_id, name=name, tier=tier, default_ttl_seconds=default_ttl_seconds)
            .on_conflict_do_nothing(index_elements=["tenant_id"])
        )
        return bool((await self._connection.execute(statement)).rowcount)

    async def get(self, tenant_id: str) -> Tenant | None:
        row = (await self._connection.execute(select(tenants).where(tc.tenant_id == tenant_id))).one_or_none()
        return Tenant(**row._mapping) if row is not None else None

    async def all(self) -> list[Tenant]:
        return [
            Tenant(**row._mapping) for row in await self._connection.execute(select(tenants).order_by(tc.tenant_id))
        ]

    async def update(self, tenant_id: str, **values: object) -> Tenant | None:
        statement = update(tenants).where(tc.tenant_id == tenant_id).values(**values).returning(tenants)
        row = (await self._connection.execute(statement)).one_or_none()
        return Tenant(**row._mapping) if row is not None else None

    async def exists(self, tenant_id: str) -> bool:
        query = select(tc.tenant_id).where(tc.tenant_id == tenant_id)
        return (await self._connection.execute(query)).first() is not None

    async def limits(self, tenant_ids: Collection[str] | None = None) -> list[TenantLimits]:
        query = select(*_LIMITS)
        if tenant_ids is not None:
            query = query.where(tc.tenant_id.in_(list(tenant_ids)))
        return [TenantLimits(*row) for row in await self._connection.execute(query)]

    async def dedicated(self) -> list[str]:
        query = select(tc.tenant_id).where(tc.dedicated_queue.is_(True))
        return list((await self._connection.execute(query)).scalars().all())

    async def in_flight(self, tenant_id: str, now: datetime, excluding_batch: str | None = None) -> InFlight:
        params = {"tenant": tenant_id, "now": now, "batch": excluding_batch}
        payments, size = (await self._connection.execute(_IN_FLIGHT, params)).one()
        return InFlight(int(payments), int(size))

    async def drain(self, tenant_id: str, now: datetime) -> Drain:
        params = {"tenant": tenant_id}
        unpublished = (await self._connection.execute(_UNPUBLISHED, params)).scalar_one()
        retrying = (await self._connection.execute(_RETRYING, params)).scalar_one()
        return Drain(await self.in_flight(tenant_id, now), int(unpublished), int(retrying))

    async def revoke_api_keys(self, tenant_id: str, now: datetime) -> int:
        statement = (
            update(api_keys)
            .where(api_keys.c.tenant_id == tenant_id, api_keys.c.revoked_at.is_(None))
            .values(revoked_at=now)
        )
        return int((await self._connection.execute(statement)).rowcount)

    async def erase(self, tenant_id: str) -> dict[str, int]:
        erased = {}
        for table in _ERASED_TABLES:
            statement = text(f"DELETE FROM {table} WHERE tenant_id = :tenant")  # table names from the tuple above
            erased[table] = int((await self._connection.execute(statement, {"tenant": tenant_id})).rowcount)
        return erased

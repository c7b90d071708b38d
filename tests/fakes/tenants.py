"""In-memory tenants, made with the schema's default limits."""

from collections.abc import Collection
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

from app.storage.ports.tenants import ACTIVE, Drain, InFlight, Tenant, TenantLimits
from tests.fakes.database import FakeTransaction
from tests.fakes.outbox import TABLE as OUTBOX
from tests.fakes.outbox import FakeOutbox, OutboxRow

TABLE = "tenants"


class FakeTenants:
    def __init__(self, tx: FakeTransaction) -> None:
        self._tx = tx

    async def add(self, tenant_id: str, name: str, tier: str, default_ttl_seconds: int) -> bool:
        if await self.get(tenant_id) is not None:
            return False
        tenant = Tenant(
            tenant_id=tenant_id,
            name=name,
            tier=tier,
            status=ACTIVE,
            default_ttl_seconds=default_ttl_seconds,
            max_message_bytes=65_536,
            publish_rate_per_second=1000,
            publish_bytes_per_second=10_000_000,
            max_in_flight=100_000,
            max_bytes_in_flight=1_073_741_824,
            dedicated_queue=False,
            retention_days=None,
            created_at=self._tx.db.clock(),
        )
        self._tx.insert(TABLE, tenant_id, tenant)
        return True

    async def get(self, tenant_id: str) -> Tenant | None:
        tenant: Tenant | None = self._tx.get(TABLE, tenant_id)
        return tenant

    async def all(self) -> list[Tenant]:
        tenants: list[Tenant] = self._tx.rows(TABLE)
        return sorted(tenants, key=lambda t: t.tenant_id)

    async def update(self, tenant_id: str, **values: object) -> Tenant | None:
        tenant = await self.get(tenant_id)
        if tenant is None:
            return None
        changed = replace(tenant, **cast(dict[str, Any], values))  # column names and values, as SQL's SET
        self._tx.put(TABLE, tenant_id, changed)
        return changed

    async def exists(self, tenant_id: str) -> bool:
        return await self.get(tenant_id) is not None

    async def limits(self, tenant_ids: Collection[str] | None = None) -> list[TenantLimits]:
        return [
            TenantLimits(
                t.tenant_id,
                t.status,
                t.max_message_bytes,
                t.publish_rate_per_second,
                t.publish_bytes_per_second,
                t.max_in_flight,
                t.max_bytes_in_flight,
            )
            for t in await self.all()
            if tenant_ids is None or t.tenant_id in tenant_ids
        ]

    async def dedicated(self) -> list[str]:
        return [t.tenant_id for t in await self.all() if t.dedicated_queue]

    async def in_flight(self, tenant_id: str, now: datetime, excluding_batch: str | None = None) -> InFlight:
        """The fake outbox keeps no bodies: its payments weigh nothing."""
        return InFlight(await FakeOutbox(self._tx).in_flight(tenant_id, now, excluding_batch), 0)

    async def drain(self, tenant_id: str, now: datetime) -> Drain:
        rows: list[OutboxRow] = self._tx.rows(OUTBOX)
        unpublished = sum(1 for o in rows if o.tenant_id == tenant_id and o.published_at is None)
        return Drain(await self.in_flight(tenant_id, now), unpublished, 0)

    async def revoke_api_keys(self, tenant_id: str, now: datetime) -> int:
        """The fakes keep no API keys."""
        return 0

    async def erase(self, tenant_id: str) -> dict[str, int]:
        erased = {}
        for table in list(self._tx.db.tables):
            keys = [key for key, row in self._tx.items(table) if getattr(row, "tenant_id", None) == tenant_id]
            for key in keys:
                self._tx.delete(table, key)
            erased[table] = len(keys)
        return erased

"""The consumer's copy of every tenant's limits and status, so that no message costs a query for them.

All tenants are read again once the copy is `refresh_seconds` old, so a change (`remit tenants limits`,
`suspend`) reaches the consumer within that time. A tenant the copy does not know yet (added a moment
ago) is looked up at once; one that does not exist is not looked up again until the next full read. Only
names remit can vouch for are looked up: a tenant user's own tenant, or the tenant remit itself
published for, never a name a direct publisher wrote into a header.
"""

import asyncio
import math
import time
from collections.abc import Callable, Collection, Mapping

from app.storage.ports.tenants import TenantLimits
from app.storage.unit_of_work import UnitOfWorkFactory


class TenantDirectory:
    def __init__(
        self, uow_factory: UnitOfWorkFactory, refresh_seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._uow_factory = uow_factory
        self._refresh = refresh_seconds
        self._clock = clock
        self._tenants: dict[str, TenantLimits] = {}
        self._absent: set[str] = set()  # looked up since the last full read, and not there
        self._read_at = -math.inf
        self._lock = asyncio.Lock()  # concurrent batches share one read

    async def limits(self, tenant_ids: Collection[str]) -> Mapping[str, TenantLimits]:
        """Every tenant the copy knows, fresh within refresh_seconds, including the ones asked for if
        they exist. The mapping returned is never changed afterwards: later reads make a new one."""
        if self._stale() or self._unseen(tenant_ids):
            async with self._lock:
                if self._stale():
                    await self._read_all()
                unseen = self._unseen(tenant_ids)
                if unseen:
                    await self._read(unseen)
        return self._tenants

    def _stale(self) -> bool:
        return self._clock() - self._read_at >= self._refresh

    def _unseen(self, tenant_ids: Collection[str]) -> list[str]:
        return [t for t in tenant_ids if t not in self._tenants and t not in self._absent]

    async def _read_all(self) -> None:
        read_at = self._clock()
        self._tenants = {t.tenant_id: t for t in await self._select(None)}
        self._absent = set()
        self._read_at = read_at

    async def _read(self, tenant_ids: list[str]) -> None:
        found = {t.tenant_id: t for t in await self._select(tenant_ids)}
        self._tenants = {**self._tenants, **found}
        self._absent |= set(tenant_ids) - found.keys()

    async def _select(self, tenant_ids: list[str] | None) -> list[TenantLimits]:
        async with self._uow_factory() as uow:  # every tenant's row: the system scope
            return await uow.tenants.limits(tenant_ids)

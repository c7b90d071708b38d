"""Which relay leads: a PostgreSQL advisory lock held by a connection of the leader's own, and checked.

A session-level advisory lock lives as long as the connection that took it. When that connection goes (a
failover, a network cut, `pg_terminate_backend`) the lock goes with it and a standby takes it, while the
old leader's process may be running on as if nothing happened. So the leader does not trust that it still
leads: before every cycle it asks PostgreSQL, over the lock connection, whether that backend still holds
the lock (`check`), and stops publishing the moment it does not.

Cycles also take turns across processes (`ONE_CYCLE_AT_A_TIME`, held for a cycle's transaction): a check
that passed belongs to a cycle that ends before any later leader's first cycle begins, so two leaders never
publish at the same time and each batch keeps its order.
"""

import asyncio
import contextlib
import logging
from typing import Final

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.observability.outage import Outage

log = logging.getLogger("remit.relay")

RELAY_LOCK_KEY: Final = 0x72656D6974  # "remit": one advisory lock id for the relay leadership
STANDBY_POLL_SECONDS: Final = 1.0
# A relay that lost the lock (its connection died: its network, or its database session) waits this long
# before it competes again, so that a standby, which tries every STANDBY_POLL_SECONDS, takes over first.
HANDOVER_SECONDS: Final = 2 * STANDBY_POLL_SECONDS
CHECK_TIMEOUT_SECONDS: Final = 5.0

# The two-key form keeps this apart from the one-key leadership lock.
ONE_CYCLE_AT_A_TIME: Final = text("SELECT pg_advisory_xact_lock(1919705465, 0)")  # b"rlay"
_TRY_LOCK = text("SELECT pg_try_advisory_lock(:key)").bindparams(key=RELAY_LOCK_KEY)
# A bigint advisory key shows in pg_locks as classid (high 32 bits), objid (low 32 bits), objsubid 1.
_HELD = text(
    "SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid() "
    "AND classid = :high AND objid = :low AND objsubid = 1)"
).bindparams(high=RELAY_LOCK_KEY >> 32, low=RELAY_LOCK_KEY & 0xFFFFFFFF)


class Leadership:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._conn: AsyncConnection | None = None
        self.lost = False  # the last check found the lock gone
        # PostgreSQL away: try again backing off to every 5 s, and log the outage once (not every second).
        self._outage = Outage("relay taking the lead (PostgreSQL)", log, base=STANDBY_POLL_SECONDS, cap=5.0)

    async def acquire(self, stop: asyncio.Event) -> bool:
        """Wait as a standby until this relay holds the lock (True), or until `stop` is set (False)."""
        while not stop.is_set():
            try:
                got = await self._try()
            except (SQLAlchemyError, OSError) as exc:  # PostgreSQL away (a failover): keep waiting
                await sleep_unless(stop, self._outage.failed(exc))
                continue
            self._outage.worked()
            if got:
                self.lost = False
                return True
            await sleep_unless(stop, STANDBY_POLL_SECONDS)
        return False

    async def check(self) -> bool:
        """Whether this relay still leads: its lock connection answers and PostgreSQL shows the lock held by
        that connection's backend. Once lost, the relay leads again only through `acquire`."""
        if self._conn is None:
            return False
        try:
            held = await asyncio.wait_for(self._conn.execute(_HELD), CHECK_TIMEOUT_SECONDS)
            still = bool(held.scalar_one())
            await self._conn.commit()
        except (SQLAlchemyError, OSError, TimeoutError):
            still = False
        if not still:
            self.lost = True
            await self.release()
        return still

    async def release(self) -> None:
        """End the lock connection for good: never back to the pool, where it could keep the lock."""
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(SQLAlchemyError, OSError):  # a dead connection has nothing to release
                await conn.invalidate()
                await conn.close()

    async def _try(self) -> bool:
        conn = await self._engine.connect()
        try:
            got = bool((await conn.execute(_TRY_LOCK)).scalar_one())
            await conn.commit()
        except BaseException:
            with contextlib.suppress(SQLAlchemyError, OSError):
                await conn.invalidate()
            raise
        if got:
            self._conn = conn
        else:
            await conn.close()
        return got


async def sleep_unless(stop: asyncio.Event, seconds: float) -> None:
    """Sleep, but wake as soon as `stop` is set."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)

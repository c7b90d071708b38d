"""The journal export: booked transfers in a stable order, a page at a time, from a cursor.

Rows are ordered by (txid, transfer_id) and a page only reaches rows below a horizon: a transfer that commits
late carries a txid at or above the horizon, so it can never appear behind a cursor a reader already holds.

The horizon is the oldest transaction still running *on the core's own database* (`_horizon`), not
`pg_snapshot_xmin`, which is server-wide: any long transaction on any other database of the server would
hold the export back. Why the per-database horizon is safe, in the order it is read:
1. `next` = the next transaction id to be assigned (pg_current_snapshot's xmax);
2. `running` = the ids of this database's transactions that hold one now (pg_stat_activity.backend_xid,
   pg_prepared_xacts);
3. the page, under a snapshot taken after both, keeps rows with txid < min(running + [next]).
A transfer with txid below that bound got its id before step 1; if it was still running at step 2, its id is
in `running`, so it is at or above the bound; so it had ended before step 3's snapshot: committed (visible) or
rolled back (no row). When pg_stat_activity hides another role's sessions on this database (their xids are
not shown), the export falls back to the server-wide `pg_snapshot_xmin`.
"""

import re

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from corebank.errors import BadCursor
from corebank.schemas import ExportedTransfer, JournalPage

CURSOR_PATTERN = r"^[0-9]{1,19}\.[0-9]{1,19}$"
START = "0.0"

_PAGE = text(
    """
    SELECT transfer_id, idempotency_key, amount_cents, currency, debtor_bsb, debtor_account, creditor_bsb,
           creditor_account, reference, recorded_at AS booked_at, txid
    FROM transfers
    WHERE status = 'booked'
      AND (txid, transfer_id) > (:txid, :transfer_id)
      AND txid < :horizon
    ORDER BY txid, transfer_id
    LIMIT :limit
    """
)


_NEXT = text("SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint")
_SERVER_XMIN = text("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
_RUNNING = text(
    """
    SELECT backend_xid::text::bigint AS xid, query = '<insufficient privilege>' AS hidden FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid()
      AND (backend_xid IS NOT NULL OR query = '<insufficient privilege>')
    UNION ALL
    SELECT transaction::text::bigint, false FROM pg_prepared_xacts WHERE database = current_database()
    """
)


async def _horizon(conn: AsyncConnection) -> int:
    """The oldest transaction id still running on this database, or the next one to be assigned (see above).
    Must be the first thing its transaction reads: pg_stat_activity is read once per transaction."""
    next_xid = int((await conn.execute(_NEXT)).scalar_one())
    running = (await conn.execute(_RUNNING)).all()
    if any(r.hidden for r in running):
        return int((await conn.execute(_SERVER_XMIN)).scalar_one())
    return min([_widen(int(r.xid), next_xid) for r in running] + [next_xid])


def _widen(xid32: int, next_xid: int) -> int:
    """A 32-bit xid of a running transaction as the 64-bit id (it is older than `next_xid`)."""
    xid = (next_xid & ~0xFFFFFFFF) | xid32
    return xid - 2**32 if xid >= next_xid else xid


async def page(conn: AsyncConnection, after: str, limit: int) -> JournalPage:
    txid, transfer_id = _parse(after)
    horizon = await _horizon(conn)
    params = {"txid": txid, "transfer_id": transfer_id, "limit": limit + 1, "horizon": horizon}
    rows = (await conn.execute(_PAGE, params)).mappings().all()
    shown = rows[:limit]
    transfers = [ExportedTransfer.model_validate({**r, "transfer_id": str(r["transfer_id"])}) for r in shown]
    cursor = f"{shown[-1]['txid']}.{shown[-1]['transfer_id']}" if shown else after
    return JournalPage(transfers=transfers, cursor=cursor, has_more=len(rows) > limit)


def _parse(cursor: str) -> tuple[int, int]:
    parts = [int(p) for p in cursor.split(".")] if re.fullmatch(CURSOR_PATTERN, cursor) else []
    if len(parts) != 2 or max(parts) >= 2**63:
        raise BadCursor("the cursor is not one this service handed out")
    return parts[0], parts[1]

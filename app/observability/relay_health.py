"""Is the outbox being relayed? What /readyz and `remit status` say about the relay.

Accepted payments wait in the outbox until the relay publishes them, so a relay that is not running (or runs
as a standby that never takes the lead) leaves them there with nothing else looking wrong: the consumer is
idle and healthy, `remit status` shows them "in flight". PostgreSQL knows both halves of the answer: whether
any session of this database holds the relay's leadership lock (app/publisher/leadership.py), and how old
the oldest unpublished row is. A backlog alone is normal (a burst, backpressure), and so is no relay while
nothing waits; only the two together, for longer than the threshold, are a problem.

Rows the broker refused (unroutable: the tenant has no binding; or nacked) are another problem with another
fix: the relay is alive and retries them with backoff, but they will not go until someone fixes the tenant's
route. They are counted apart (`publish_refusals > 0`): they do not make a relay look dead (nor /readyz red:
the pipeline delivers every other tenant's payments), and `remit status` and /readyz's `warnings` name them.
"""

from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from app.publisher.leadership import RELAY_LOCK_KEY

# A bigint advisory key shows in pg_locks as classid (high 32 bits), objid (low 32 bits), objsubid 1; advisory
# locks are per database, so only this database's lock counts.
_LEADER = text(
    "SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = :high "
    "AND objid = :low AND objsubid = 1 AND database = (SELECT oid FROM pg_database WHERE datname = "
    "current_database()))"
).bindparams(high=RELAY_LOCK_KEY >> 32, low=RELAY_LOCK_KEY & 0xFFFFFFFF)
# The oldest unpublished row by outbox_id (the partial index ix_outbox_unpublished), aged by the database's
# clock, and the backlog counted up to a cap so that the check stays cheap under a flood; the same for the
# rows the broker refused.
BACKLOG_COUNT_CAP = 100_000
_BACKLOG = text(
    "SELECT (SELECT EXTRACT(EPOCH FROM now() - accepted_at) FROM outbox WHERE published_at IS NULL "
    "AND publish_refusals = 0 ORDER BY outbox_id LIMIT 1) AS oldest_seconds, "
    "(SELECT count(*) FROM (SELECT 1 FROM outbox WHERE published_at IS NULL AND publish_refusals = 0 "
    "LIMIT :cap) AS capped) AS waiting, "
    "(SELECT EXTRACT(EPOCH FROM now() - accepted_at) FROM outbox WHERE published_at IS NULL "
    "AND publish_refusals > 0 ORDER BY outbox_id LIMIT 1) AS oldest_refused_seconds, "
    "(SELECT count(*) FROM (SELECT 1 FROM outbox WHERE published_at IS NULL AND publish_refusals > 0 "
    "LIMIT :cap) AS capped) AS refused"
).bindparams(cap=BACKLOG_COUNT_CAP)


@dataclass(frozen=True, slots=True)
class RelayState:
    leading: bool  # some session of this database holds the relay's leadership lock
    waiting: int  # unpublished outbox rows the broker never refused, counted up to BACKLOG_COUNT_CAP
    oldest_seconds: float | None  # age of the oldest of them; None when none waits
    refused: int = 0  # unpublished rows the broker refused at least once, counted up to BACKLOG_COUNT_CAP
    oldest_refused_seconds: float | None = None

    def problem(self, threshold_seconds: float) -> str | None:
        """Why the outbox is not being relayed, in one line; None when it is (or nothing waits long enough)."""
        if self.leading or self.oldest_seconds is None or self.oldest_seconds < threshold_seconds:
            return None
        return (
            f"no relay is leading and {_count(self.waiting)} accepted payment(s) wait in the outbox, the oldest "
            f"for {self.oldest_seconds:.0f}s (more than {threshold_seconds:g}s): start `remit relay`"
        )

    def refusals(self, threshold_seconds: float) -> str | None:
        """Rows the broker refused for longer than the threshold, in one line; None when there are none."""
        if self.oldest_refused_seconds is None or self.oldest_refused_seconds < threshold_seconds:
            return None
        return (
            f"{_count(self.refused)} row(s) refused by the broker (unroutable), retried with backoff, the oldest "
            f"waiting {self.oldest_refused_seconds:.0f}s: fix the tenant's route (`remit tenants show`)"
        )


def _count(rows: int) -> str:
    return f"{rows:,}" + ("+" if rows >= BACKLOG_COUNT_CAP else "")


async def relay_state(conn: AsyncConnection) -> RelayState:
    """Read on a connection that sees every tenant's outbox rows (the system scope)."""
    leading = bool((await conn.execute(_LEADER)).scalar_one())
    row = (await conn.execute(_BACKLOG)).one()
    return RelayState(
        leading=leading,
        waiting=int(row.waiting),
        oldest_seconds=_seconds(row.oldest_seconds),
        refused=int(row.refused),
        oldest_refused_seconds=_seconds(row.oldest_refused_seconds),
    )


def _seconds(value: object) -> float | None:
    return None if value is None else float(str(value))

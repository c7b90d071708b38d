"""remit's queues as they are now: depths, consumers and rates from the management API, and the age of
the message at each queue's head.

The age comes from the head message's `timestamp` property: for a classic queue the management API
reports it (`head_message_timestamp`); quorum queues (all of remit's) do not, so the broker's own peek
reads it at position 1 (app/messaging/broker_peek.py), without delivering anything. remit sets the
property on everything it publishes (the relay: when ingress accepted the payment; retries and replays:
the payment's timestamp_utc); a tenant publishing directly may leave it out (age unknown) or set any value.
"""

import asyncio
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from app.errors import RemitError
from app.messaging.broker_peek import BrokerPeek
from app.messaging.management import QueueStats
from app.messaging.topology import TIERS, Topology

TIER, DEDICATED, RETRY, DEAD_LETTER = "tier", "dedicated", "retry", "dead-letter"


@dataclass(frozen=True, slots=True)
class QueueKind:
    kind: str  # TIER, DEDICATED, RETRY or DEAD_LETTER
    detail: str  # the tier, the tenant, the delay, or ""

    def __str__(self) -> str:
        return f"{self.kind} {self.detail}".strip()


@dataclass(frozen=True, slots=True)
class QueueFigures:
    name: str
    kind: QueueKind
    ready: int
    unacknowledged: int
    consumers: int
    publish_rate: float
    deliver_rate: float
    oldest_age_seconds: float | None  # None: empty, or the head has no timestamp, or it could not be read


@dataclass(frozen=True, slots=True)
class LiveQueues:
    queues: list[QueueFigures]
    age_problem: str | None  # why oldest ages are missing, when they are


def kind_of(topology: Topology, name: str) -> QueueKind | None:
    """The kind of one of remit's queues; None for any other queue in the vhost. Every delay queue counts,
    also one of delays no longer configured: it still drains back to the exchange."""
    tiers = {topology.tier_queue(t): t for t in TIERS}
    dedicated_prefix = topology.dedicated_queue("")
    if name in tiers:
        return QueueKind(TIER, tiers[name])
    if name.startswith(dedicated_prefix) and len(name) > len(dedicated_prefix):
        return QueueKind(DEDICATED, name.removeprefix(dedicated_prefix))
    if re.fullmatch(rf"{re.escape(topology.exchange)}\.retry\.\d+ms", name):
        return QueueKind(RETRY, name.rsplit(".", 1)[1])
    if name == topology.dead_letter_queue:
        return QueueKind(DEAD_LETTER, "")
    return None


class QueueStatsSource(Protocol):
    """The management API's figures of a vhost's queues (app/messaging/management.py)."""

    def queue_stats(self, vhost: str) -> list[QueueStats]: ...


@dataclass(frozen=True, slots=True)
class Taken:
    """The newest message a consumer of this process took from a queue: its `timestamp` property (None when
    the publisher set none) and when it arrived (epoch seconds)."""

    timestamp: datetime | None
    arrived: float


def nothing_taken(queue: str) -> Taken | None:
    return None


# A queue this process took a message from this recently is flowing: the head is what came right after that
# message, so its age is that message's (a consumer takes the oldest first), and no peek is needed.
TAKEN_RECENTLY_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class QueueWatch:
    """Where the figures come from: the management API for depths and rates, the broker's peek for ages (or,
    for a queue this process is taking messages from, the newest one it took: `taken`)."""

    management: QueueStatsSource
    peek: BrokerPeek
    topology: Topology
    vhost: str
    taken: Callable[[str], Taken | None] = nothing_taken

    async def live(self, now: datetime, only: Collection[str] | None = None) -> LiveQueues:
        """remit's queues (those named in `only`, if given), in name order."""
        stats = await asyncio.to_thread(self.management.queue_stats, self.vhost)
        mine = [(s, k) for s in stats if (k := kind_of(self.topology, s.name)) and (only is None or s.name in only)]
        mine.sort(key=lambda pair: pair[0].name)
        ages: dict[str, float | None] = {}
        problem = None
        try:
            for s, _ in mine:
                ages[s.name] = await _oldest_age(self.peek, self.vhost, s, now, self.taken(s.name))
        except RemitError as exc:
            problem = str(exc)
        return LiveQueues([_figures(s, kind, ages.get(s.name)) for s, kind in mine], problem)


async def _oldest_age(
    peek: BrokerPeek, vhost: str, stats: QueueStats, now: datetime, taken: Taken | None
) -> float | None:
    if stats.ready == 0:
        return None
    if stats.head_timestamp is not None:
        return max(now.timestamp() - stats.head_timestamp, 0.0)
    if taken is not None and now.timestamp() - taken.arrived <= TAKEN_RECENTLY_SECONDS:
        head_timestamp = taken.timestamp
    else:
        head = await peek.at(vhost, stats.name, 1)
        head_timestamp = None if head is None else head.timestamp
    return None if head_timestamp is None else max((now - head_timestamp).total_seconds(), 0.0)


def _figures(stats: QueueStats, kind: QueueKind, age: float | None) -> QueueFigures:
    return QueueFigures(
        name=stats.name,
        kind=kind,
        ready=stats.ready,
        unacknowledged=stats.unacknowledged,
        consumers=stats.consumers,
        publish_rate=stats.publish_rate,
        deliver_rate=stats.deliver_rate,
        oldest_age_seconds=age,
    )

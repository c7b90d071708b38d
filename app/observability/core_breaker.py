"""Is a consumer's core-banking circuit breaker open? What the console's Workers page, `remit status` and the admin
API's workers status say of it.

A consumer pauses every pool of its own while its breaker is open (app/consumer/pools.py) and each heartbeat says so:
why (`paused_by`, made here, naming the last failure) and since when (`paused_since`, the breaker's time of opening).
Only processes that reported in the last 15 s count, as `remit workers status` counts them: a process killed while
paused is gone, not paused.
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from app.observability.queue_overview import format_age
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.pool_operations import FRESH

_OPEN = "core banking circuit breaker open"
_LAST_FAILURE = re.compile(r"\(last failure: (.+)\)$")
MEANING = (
    "Payments wait in their queues: nothing is lost, and no retry is spent while it is open. They are booked once the "
    "core answers again: the breaker probes it, and the consumers resume by themselves."
)


def pause_reason(last_failure: str | None) -> str:
    """A paused consumer's heartbeat's `paused_by`: the breaker, and the kind of failure that opened it."""
    return f"{_OPEN} (last failure: {last_failure or 'unknown'})"


@dataclass(frozen=True, slots=True)
class BreakerNotice:
    processes: int  # consumer processes whose breaker is open
    since: datetime | None  # the earliest opening among them (None: only processes from before it was recorded)
    last_failures: list[str]  # the kinds of failure that opened them (an exception class, an HTTP status), each once

    def describe(self, now: datetime) -> str:
        """What is open, since when and what it means, in one paragraph."""
        many = self.processes > 1
        text = f"the core-banking circuit breaker is open in {self.processes} consumer process{'es' if many else ''}"
        facts = [f"last failure: {', '.join(self.last_failures)}"] if self.last_failures else []
        if self.since is not None:
            text += f" since {self.since.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
            facts.insert(0, f"{format_age((now - self.since).total_seconds(), 1)} ago")
        text += f" ({', '.join(facts)})" if facts else ""
        who = "they" if many else "it"
        return f"{text}: the core failed too often in a row, so {who} stopped taking payments. {MEANING}"


async def breaker_notice(uow_factory: UnitOfWorkFactory, now: datetime) -> BreakerNotice | None:
    """None while no live consumer's breaker is open. `uow_factory` must reach the system scope (heartbeats)."""
    async with uow_factory() as uow:
        paused = [p for p in await uow.worker_pools.paused(now - FRESH) if p.paused_by.startswith(_OPEN)]
    if not paused:
        return None
    openings = [p.paused_since for p in paused if p.paused_since is not None]
    failures = {m.group(1) for p in paused if (m := _LAST_FAILURE.search(p.paused_by))}
    return BreakerNotice(len(paused), min(openings, default=None), sorted(failures))

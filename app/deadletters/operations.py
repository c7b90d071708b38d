"""Dead-letter operations as `remit dlq`, the HTTP API and the console all call them.

One place reads what a caller typed (times, statuses), refuses a filter that names an unknown reason, tenant
or batch, and lists, shows, counts, replays (a dry run never holds a real publisher) and discards. Entry
points only parse their own input, decide the caller's scope (`tenant`: one tenant, or None for all) and
print or serialize. `dash` is how the caller spells an option in messages: "--" for the CLI, "" for HTTP.
"""

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from app import known_filters
from app.deadletters import reasons
from app.deadletters.audit import AuditEntry, list_audit
from app.deadletters.discard import discard_dead_letter
from app.deadletters.query import DeadLetterFilter
from app.deadletters.replay import ReplayOutcome, ReplayPolicy, replay_dead_letters
from app.deadletters.republish import DryRunPublisher, ReplayPublisher
from app.deadletters.requests import ReplayRequest, RequestEntry, list_requests
from app.deadletters.review import (
    DeadLetterDetail,
    DeadLetterStats,
    DeadLetterSummary,
    dead_letter_stats,
    list_dead_letters,
    show_dead_letter,
)
from app.errors import UsageError
from app.storage.unit_of_work import UnitOfWorkFactory
from app.time_forms import not_a_time
from app.unknown_values import unknown_value

_AGE = re.compile(r"^(\d+)([mhd])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days"}


def parse_when(value: str | None, option: str) -> datetime | None:
    """An ISO 8601 time (UTC if it has no offset) or an age like 30m / 2h / 7d meaning that long ago."""
    if value is None:
        return None
    if match := _AGE.match(value.strip()):
        return datetime.now(UTC) - timedelta(**{_UNITS[match[2]]: int(match[1])})
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(not_a_time(option, value)) from None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


def parse_status(value: str, option: str) -> str | None:
    """A status, or None for `all`."""
    if value == "all":
        return None
    if value not in reasons.STATUSES:
        raise UsageError(f"{option} {value!r} is not one of {', '.join(reasons.STATUSES)} or all")
    return value


@dataclass(frozen=True, slots=True)
class Filters:
    """Filters as a person or a client types them (text; empty means not given), before they are checked."""

    reason: str | None = None
    batch: str | None = None
    currency: str | None = None
    status: str = reasons.OPEN
    since: str | None = None
    until: str | None = None
    tenant: str | None = None  # a wish: the entry point decides the scope

    def parsed(self, scope: str | None, dash: str = "") -> DeadLetterFilter:
        """The store's filter within `scope` (the tenant the entry point decided, None for all)."""
        return DeadLetterFilter(
            tenant=scope,
            reason=self.reason or None,
            batch=self.batch or None,
            currency=self.currency or None,
            status=parse_status(self.status, f"{dash}status"),
            since=parse_when(self.since or None, f"{dash}since"),
            until=parse_when(self.until or None, f"{dash}until"),
        )

    def given(self, *, with_tenant: bool) -> bool:
        """Any filter given? The tenant counts only where the caller may choose it."""
        tenant = self.tenant if with_tenant else None
        return any((self.reason, self.batch, self.currency, self.since, self.until, tenant))


async def check_known(uow_factory: UnitOfWorkFactory, where: DeadLetterFilter, dash: str = "") -> None:
    """A reason, tenant or batch that the caller's scope does not know is an error naming the known ones,
    never an empty answer (app/known_filters.py)."""
    if where.reason is not None and where.reason not in reasons.REASONS:
        raise unknown_value(f"{dash}reason", where.reason, reasons.REASONS, "a dead-letter reason")
    await known_filters.check_known(uow_factory, where.tenant, [where.batch] if where.batch else [], dash)


async def find(
    uow_factory: UnitOfWorkFactory, where: DeadLetterFilter, limit: int, dash: str = ""
) -> list[DeadLetterSummary]:
    """Newest first."""
    await check_known(uow_factory, where, dash)
    return await list_dead_letters(uow_factory, where, limit)


async def stats(uow_factory: UnitOfWorkFactory, where: DeadLetterFilter, dash: str = "") -> DeadLetterStats:
    await check_known(uow_factory, where, dash)
    return await dead_letter_stats(uow_factory, where)


async def show(
    uow_factory: UnitOfWorkFactory, dead_letter_id: int, tenant: str | None, unmask: bool
) -> DeadLetterDetail:
    return await show_dead_letter(uow_factory, dead_letter_id, tenant, unmask)


@dataclass(frozen=True, slots=True)
class AuditTrail:
    requests: list[RequestEntry]  # none when one dead letter's entries were asked for
    entries: list[AuditEntry]


async def audit(
    uow_factory: UnitOfWorkFactory, tenant: str | None, dead_letter_id: int | None, limit: int, dash: str = ""
) -> AuditTrail:
    await check_known(uow_factory, DeadLetterFilter(tenant=tenant), dash)
    requests = [] if dead_letter_id is not None else await list_requests(uow_factory, tenant, limit)
    return AuditTrail(requests, await list_audit(uow_factory, tenant, dead_letter_id, limit))


@dataclass(frozen=True, slots=True)
class ReplayReport:
    dry_run: bool
    summary: dict[str, int]  # action -> how many
    outcomes: list[ReplayOutcome]


async def replay(
    uow_factory: UnitOfWorkFactory,
    request: ReplayRequest,
    publisher: ReplayPublisher,
    *,
    user_id: str,
    policy: ReplayPolicy,
    on_outcome: Callable[[ReplayOutcome, int], None] | None = None,
    dash: str = "",
) -> ReplayReport:
    """Replay what the request selects. A dry run gets a publisher that cannot publish, whatever was passed."""
    if not request.dead_letter_ids:
        await check_known(uow_factory, request.where, dash)
    outcomes = await replay_dead_letters(
        uow_factory,
        DryRunPublisher() if request.dry_run else publisher,
        request,
        user_id=user_id,
        policy=policy,
        on_outcome=on_outcome,
    )
    return ReplayReport(request.dry_run, dict(sorted(Counter(o.action for o in outcomes).items())), outcomes)


@dataclass(frozen=True, slots=True)
class Discarded:
    dead_letter_id: int
    status: str
    actor: str
    reason: str
    at: datetime


async def discard(
    uow_factory: UnitOfWorkFactory, dead_letter_id: int, why: str, actor: str, tenant: str | None
) -> Discarded:
    now = datetime.now(UTC)
    await discard_dead_letter(uow_factory, dead_letter_id, why, actor, tenant, now)
    return Discarded(dead_letter_id, reasons.DISCARDED, actor, why, now)

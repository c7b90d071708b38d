"""Dead-letter operations on behalf of a caller: the scope is always the caller's, whatever was asked.

Thin wrappers over app/deadletters: they fix the tenant from the caller, check that every id named is
visible to it (another tenant's id is simply not found), and turn console/API input into the service's
filter and request types.
"""

from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from app.admin.caller import Caller
from app.admin.services import AdminServices
from app.cli.dlq import parse_when  # shared with `remit dlq`: ISO times or ages like 2h, 7d
from app.deadletters.discard import discard_dead_letter
from app.deadletters.errors import ReplayRefused
from app.deadletters.query import DeadLetterFilter, get_dead_letter
from app.deadletters.reasons import OPEN, STATUSES
from app.deadletters.replay import ReplayOutcome, ReplayRequest, replay_dead_letters
from app.errors import UsageError
from app.storage.unit_of_work import UnitOfWorkFactory

MAX_IDS = 500


@dataclass(frozen=True, slots=True)
class Filters:
    """Filters as a person or a client gives them (text), before they are checked."""

    reason: str | None = None
    batch: str | None = None
    currency: str | None = None
    status: str = OPEN
    since: str | None = None
    until: str | None = None
    tenant: str | None = None  # honoured for admins only

    def narrows(self, caller: Caller) -> bool:
        """Any filter given? A tenant field counts for admins only: for a tenant caller it changes nothing."""
        tenant = self.tenant if caller.is_admin else None
        return any(v for v in (self.reason, self.batch, self.currency, self.since, self.until, tenant))

    def for_caller(self, caller: Caller) -> DeadLetterFilter:
        return DeadLetterFilter(
            tenant=caller.scope(self.tenant or None),
            reason=self.reason or None,
            batch=self.batch or None,
            currency=self.currency or None,
            status=parse_status(self.status),
            since=parse_when(self.since or None, "since"),
            until=parse_when(self.until or None, "until"),
        )


def parse_status(value: str) -> str | None:
    if value == "all":
        return None
    if value not in STATUSES:
        raise UsageError(f"status {value!r} is not one of {', '.join(STATUSES)} or all")
    return value


@dataclass(frozen=True, slots=True)
class ReplayReport:
    dry_run: bool
    summary: dict[str, int]
    outcomes: list[ReplayOutcome]


async def replay_for(
    services: AdminServices,
    caller: Caller,
    ids: list[int],
    filters: Filters | None,
    everything: bool,
    *,
    dry_run: bool,
    force: bool,
    why: str | None,
) -> ReplayReport:
    """Replay the dead letters named by id, or those a filter (or `everything`) selects, in the caller's
    scope. Unlike `remit dlq replay --tenant T`, a tenant's own scope alone never selects anything."""
    uow = services.uow(caller)
    base = ReplayRequest(actor=caller.actor, dry_run=dry_run, force=force, why=why or None)
    if ids:
        if everything or (filters is not None and filters.narrows(caller)):
            raise ReplayRefused("give either dead letter ids or a filter/all, not both")
        requests = await _requests_for_ids(uow, caller, ids, base)
    else:
        requests = [_request_for_filter(caller, filters or Filters(), everything, base)]
    outcomes: list[ReplayOutcome] = []
    for request in requests:
        outcomes += await replay_dead_letters(
            uow,
            services.publisher_for(dry_run),
            request,
            user_id=services.replay_user,
            policy=services.replay_policy,
        )
    return ReplayReport(dry_run, dict(sorted(Counter(o.action for o in outcomes).items())), outcomes)


async def _requests_for_ids(
    uow: UnitOfWorkFactory, caller: Caller, ids: list[int], base: ReplayRequest
) -> list[ReplayRequest]:
    unique = list(dict.fromkeys(ids))
    if len(unique) > MAX_IDS:
        raise ReplayRefused(f"at most {MAX_IDS} ids per replay; use a filter for more")
    await ensure_visible(uow, caller, unique)
    scope = DeadLetterFilter(tenant=caller.scope())
    return [replace(base, dead_letter_id=i, where=scope) for i in unique]


def _request_for_filter(caller: Caller, filters: Filters, everything: bool, base: ReplayRequest) -> ReplayRequest:
    if not (filters.narrows(caller) or everything):
        raise ReplayRefused(
            "say which dead letters to replay: ids, a filter (reason, batch, currency, since, until) or all"
        )
    return replace(base, where=filters.for_caller(caller), everything=everything)


async def ensure_visible(uow: UnitOfWorkFactory, caller: Caller, ids: list[int]) -> None:
    """Raise DeadLetterNotFound for the first id outside the caller's scope (404: existence is not leaked)."""
    async with uow() as u:
        for dead_letter_id in ids:
            await get_dead_letter(u.connection, dead_letter_id, caller.scope())


@dataclass(frozen=True, slots=True)
class Discarded:
    dead_letter_id: int
    status: str
    actor: str
    reason: str
    at: datetime


async def discard_for(services: AdminServices, caller: Caller, dead_letter_id: int, reason: str) -> Discarded:
    now = datetime.now(UTC)
    await discard_dead_letter(services.uow(caller), dead_letter_id, reason, caller.actor, caller.scope(), now)
    return Discarded(dead_letter_id, "discarded", caller.actor, reason, now)

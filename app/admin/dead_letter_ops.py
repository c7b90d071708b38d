"""Dead-letter operations for a caller of the HTTP API or the console: the scope is always the caller's.

The operations are app/deadletters/operations.py, shared with `remit dlq`; this only fixes the tenant from
the caller (another tenant's id is simply not found) and the rules of a replay asked for over HTTP.
"""

from dataclasses import replace

from app.admin.caller import Caller
from app.admin.services import AdminServices
from app.deadletters import operations
from app.deadletters.operations import Discarded, Filters, ReplayReport
from app.deadletters.query import DeadLetterFilter
from app.deadletters.requests import ReplayRequest, refuse_request
from app.errors import ReplayRefused

MAX_IDS = 500


def where_for(caller: Caller, filters: Filters) -> DeadLetterFilter:
    """The filter in the caller's scope: a tenant's key is its own tenant whatever it asked for."""
    return filters.parsed(caller.scope(filters.tenant or None))


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
    scope. Unlike `remit dlq replay --tenant T`, a tenant's own scope alone never selects anything. Only
    an admin key may force. Every request is in the audit trail, refused ones too."""
    uow = services.uow(caller)
    base = ReplayRequest(
        actor=caller.actor,
        dead_letter_ids=tuple(dict.fromkeys(ids)),
        where=DeadLetterFilter(tenant=caller.scope()),
        everything=everything,
        dry_run=dry_run,
        force=force,
        may_force=caller.is_admin,
        why=why or None,
    )
    try:
        request = _request(caller, filters, base)
    except ReplayRefused as exc:
        await refuse_request(uow, base, str(exc))
        raise
    return await operations.replay(
        uow, request, services.publisher, user_id=services.replay_user, policy=services.replay_policy
    )


def _request(caller: Caller, filters: Filters | None, base: ReplayRequest) -> ReplayRequest:
    """The service's request for what the caller asked (its tenant fixed), or ReplayRefused."""
    if base.dead_letter_ids:
        if base.everything or (filters is not None and filters.given(with_tenant=caller.is_admin)):
            raise ReplayRefused("give either dead letter ids or a filter/all, not both")
        if len(base.dead_letter_ids) > MAX_IDS:
            raise ReplayRefused(f"at most {MAX_IDS} ids per replay; use a filter for more")
        return base
    filters = filters or Filters()
    if not (filters.given(with_tenant=caller.is_admin) or base.everything):
        raise ReplayRefused(
            "say which dead letters to replay: ids, a filter (reason, batch, currency, since, until) or all"
        )
    return replace(base, where=where_for(caller, filters))


async def discard_for(services: AdminServices, caller: Caller, dead_letter_id: int, reason: str) -> Discarded:
    return await operations.discard(services.uow(caller), dead_letter_id, reason, caller.actor, caller.scope())

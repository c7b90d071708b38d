"""A replay request and its place in the audit trail: every one, single or bulk, refused or not.

The request row is written before anything is selected and settled with what came of it, so a request
refused as a whole (force from a tenant's key, another tenant's id, no selection) is on record as well
as one that replayed a thousand dead letters. The dead letters it touched point at it (dead_letter_audit).
"""

from dataclasses import dataclass, field, replace

from app.deadletters.masking import mask_text
from app.deadletters.query import DeadLetterFilter
from app.storage.ports.replay_requests import NewReplayRequest
from app.storage.ports.replay_requests import RequestEntry as RequestEntry
from app.storage.unit_of_work import UnitOfWorkFactory

IN_PROGRESS = "in progress"
REFUSED = "request refused: "  # the whole request; otherwise the outcome counts what happened to each
MAX_RECORDED_IDS = 1000  # a request naming more (refused anyway) is recorded with the first ones


@dataclass(frozen=True, slots=True)
class ReplayRequest:
    actor: str
    dead_letter_ids: tuple[int, ...] = ()
    where: DeadLetterFilter = field(default_factory=DeadLetterFilter)
    everything: bool = False
    dry_run: bool = False
    force: bool = False
    # Operators (the CLI, system scope) and admin keys may force; a tenant's own key may not.
    may_force: bool = True
    why: str | None = None

    def filters(self) -> dict[str, str]:
        """The filters given, as the audit trail keeps them (the tenant is the request's scope)."""
        where = self.where
        values = {
            "reason": where.reason,
            "batch": where.batch,
            "currency": where.currency,
            "status": where.status,
            "since": where.since.isoformat() if where.since else None,
            "until": where.until.isoformat() if where.until else None,
        }
        return {name: value for name, value in values.items() if value is not None}


async def open_request(uow_factory: UnitOfWorkFactory, request: ReplayRequest) -> int:
    """Record the request before it does anything; its outcome is settled when it is done."""
    async with uow_factory() as uow:
        request_id = await uow.replay_requests.open(
            NewReplayRequest(
                actor=request.actor,
                tenant_id=request.where.tenant,
                dead_letter_ids=list(request.dead_letter_ids[:MAX_RECORDED_IDS]),
                filters=request.filters(),
                everything=request.everything,
                force=request.force,
                dry_run=request.dry_run,
                why=request.why,
                outcome=IN_PROGRESS,
            )
        )
        await uow.commit()
    return request_id


async def settle_request(uow_factory: UnitOfWorkFactory, request_id: int, outcome: str) -> None:
    async with uow_factory() as uow:
        await uow.replay_requests.settle(request_id, outcome)
        await uow.commit()


async def refuse_request(uow_factory: UnitOfWorkFactory, request: ReplayRequest, why: str) -> None:
    """A request refused before it could select anything is on record too."""
    await settle_request(uow_factory, await open_request(uow_factory, request), REFUSED + why)


async def list_requests(
    uow_factory: UnitOfWorkFactory, tenant: str | None = None, limit: int = 100
) -> list[RequestEntry]:
    """Newest first. For one tenant: the requests made in its scope, and those that touched its dead letters
    (an operator's replay by id is made in no tenant's scope). Notes and outcomes masked like the audit entries'
    (app/deadletters/audit.py)."""
    async with uow_factory() as uow:
        entries = await uow.replay_requests.entries(tenant, limit)
    return [replace(r, why=r.why and mask_text(r.why), outcome=mask_text(r.outcome)) for r in entries]

"""The audit trail: who replayed, resolved, discarded or was refused which dead letter, when, why, and
whether for real. Replay requests as a whole are in app/deadletters/requests.py; each entry names its own."""

from dataclasses import replace
from datetime import datetime
from uuid import UUID

from app.deadletters.masking import mask_text
from app.storage.ports.audit import AuditEntry as AuditEntry
from app.storage.ports.audit import DeadLetterAudit, NewAuditEntry
from app.storage.ports.dead_letters import DeadLetterRecord
from app.storage.unit_of_work import UnitOfWorkFactory

REPLAY = "replay"
DISCARD = "discard"
RESOLVE = "resolve"
REFUSE = "refuse"  # a replay refused for this dead letter, with the reason as the outcome


async def record(
    trail: DeadLetterAudit,
    dead_letter: DeadLetterRecord,
    *,
    actor: str,
    action: str,
    outcome: str,
    dry_run: bool,
    why: str | None = None,
    message_id: UUID | None = None,
    at: datetime | None = None,
    request_id: int | None = None,
) -> None:
    """Written in the caller's unit of work, so the trail and the status change commit together."""
    entry = NewAuditEntry(
        actor=actor,
        action=action,
        dead_letter_id=dead_letter.dead_letter_id,
        message_id=message_id or dead_letter.message_id,
        tenant_id=dead_letter.tenant_id,
        outcome=outcome,
        dry_run=dry_run,
        why=why,
        request_id=request_id,
        at=at,
    )
    await trail.add(entry)


async def replays_used(trail: DeadLetterAudit, message_id: UUID, tenant: str | None) -> int:
    """Real (not dry-run) replays of this tenant's message_id so far, across all its dead letters. Another
    tenant using the same id cannot use up this one's budget."""
    return await trail.count_real(message_id, tenant, REPLAY)


async def list_audit(
    uow_factory: UnitOfWorkFactory,
    tenant: str | None = None,
    dead_letter_id: int | None = None,
    limit: int = 100,
) -> list[AuditEntry]:
    """Newest first, with account numbers in the notes and outcomes masked (as the trace shows them)."""
    async with uow_factory() as uow:
        entries = await uow.audit.entries(tenant, dead_letter_id, limit)
    return [masked(e) for e in entries]


def masked(entry: AuditEntry) -> AuditEntry:
    """A note (`--why`) and an outcome are free text a person typed or a rule wrote: an account number in either
    is shown masked, with app/deadletters/masking.py's rule, wherever the trail is read (CLI, API, console)."""
    return replace(entry, why=entry.why and mask_text(entry.why), outcome=mask_text(entry.outcome))

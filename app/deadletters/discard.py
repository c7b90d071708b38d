"""Discard: an operator decides a dead letter needs no further action. Nothing is ever deleted here."""

from datetime import UTC, datetime

from app.deadletters import audit, reasons
from app.deadletters.query import get_dead_letter
from app.errors import DiscardRefused
from app.storage.unit_of_work import UnitOfWorkFactory


async def discard_dead_letter(
    uow_factory: UnitOfWorkFactory,
    dead_letter_id: int,
    why: str,
    actor: str,
    tenant: str | None = None,
    now: datetime | None = None,
) -> None:
    """Mark an open dead letter discarded and record who and why in the audit trail."""
    if not why.strip():
        raise DiscardRefused(
            "say why it is discarded: --reason 'duplicate of PAY-123, paid by phone'",
            over_http='say why it is discarded: {"reason": "duplicate of PAY-123, paid by phone"}',
        )
    now = now or datetime.now(UTC)
    async with uow_factory() as uow:
        row = await get_dead_letter(uow.dead_letters, dead_letter_id, tenant, for_update=True)
        if row.status != reasons.OPEN:
            refused = f"dead letter {dead_letter_id} is {row.status}, not open"
            raise DiscardRefused(
                f"{refused}; `remit dlq show {dead_letter_id}` has its history",
                over_http=f"{refused}; GET /v1/dead-letters/{dead_letter_id} has its history",
            )
        await uow.dead_letters.set_status(dead_letter_id, reasons.DISCARDED, now)
        await audit.record(
            uow.audit, row, actor=actor, action=audit.DISCARD, outcome="discarded", dry_run=False, why=why, at=now
        )
        await uow.commit()

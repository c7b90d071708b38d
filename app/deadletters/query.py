"""Selecting dead letters: the filters every review command shares, and one dead letter within a scope."""

from app.errors import DeadLetterNotFound
from app.storage.ports.dead_letters import DeadLetterFilter as DeadLetterFilter
from app.storage.ports.dead_letters import DeadLetterRecord, DeadLetters


async def get_dead_letter(
    dead_letters: DeadLetters, dead_letter_id: int, tenant: str | None, *, for_update: bool = False
) -> DeadLetterRecord:
    """One dead letter within the scope. Another tenant's id reads exactly like a missing one."""
    row = await dead_letters.get(dead_letter_id, tenant, for_update=for_update)
    if row is None:
        scope = f" for tenant {tenant}" if tenant else ""
        raise DeadLetterNotFound(f"no dead letter {dead_letter_id}{scope}; `remit dlq list` shows the ids")
    return row

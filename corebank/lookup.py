"""The status of keys: booked, rejected, in progress (a request holds the key now) or unknown."""

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncConnection

from corebank import keys
from corebank.records import recorded
from corebank.schemas import TransferStatus


async def statuses(conn: AsyncConnection, wanted: Sequence[str]) -> list[TransferStatus]:
    # Locks first, records second (a fresh snapshot): a key not held at the first read is either recorded by
    # the second or was never committed before it.
    holding = await keys.running(conn, wanted)
    found = await recorded(conn, wanted)
    answers = []
    for key in wanted:
        if key in found:
            answers.append(TransferStatus.model_validate(found[key].outcome.fields()))
        else:
            answers.append(TransferStatus(idempotency_key=key, status="in_progress" if key in holding else "unknown"))
    return answers

"""Deleting a tenant's dedicated queue in two phases, without losing a message.

Phase 1 (`remit tenants dedicate T --off`): the tenant's key is bound to its tier queue and unbound from
the dedicated one, so nothing new arrives there; the dedicated pool keeps draining it. Phase 2 (here):
delete it once it is seen empty, ready and unacknowledged, on two checks a moment apart. RabbitMQ
refuses `if-empty` deletes on quorum queues (NOT_IMPLEMENTED, observed on 3.10), so the check is ours;
it is safe because no binding routes to the queue any more.
"""

import asyncio
import time

from aio_pika.abc import AbstractConnection

from app.errors import UsageError
from app.messaging.management import Management
from app.messaging.queues import ready_count

SETTLE_SECONDS = 2.0


async def delete_when_drained(
    connection: AbstractConnection, management: Management, vhost: str, name: str, timeout: float
) -> None:
    deadline = time.monotonic() + timeout
    empty_checks = 0
    while empty_checks < 2:
        depth = management.queue_depths(vhost, [name]).get(name)
        if depth is None:
            return  # already gone
        ready = await ready_count(connection, name)
        empty_checks = empty_checks + 1 if ready == 0 and depth["messages_unacknowledged"] == 0 else 0
        if time.monotonic() > deadline:
            raise UsageError(f"{name} still holds messages after {timeout:.0f}s; is its pool running?")
        await asyncio.sleep(SETTLE_SECONDS)
    channel = await connection.channel()
    try:
        await channel.queue_delete(name)
    finally:
        await channel.close()

"""The FastStream subscriber on the dead-letter queue: each delivery is acked only after its row is committed."""

import asyncio
import logging
from typing import Annotated

from faststream import AckPolicy, Context
from faststream.exceptions import NackMessage
from faststream.rabbit import RabbitBroker, RabbitQueue
from faststream.rabbit.annotations import RabbitMessage
from faststream.rabbit.schemas.queue import QueueType

from app.deadletters.incoming import IncomingDeadLetter
from app.deadletters.store import DeadLetterArchive
from app.messaging.topology import Topology
from app.observability.outage import Outage

log = logging.getLogger("remit.archiver")

Archive = Annotated[DeadLetterArchive, Context("archive")]

# PostgreSQL down: pause before the delivery goes back to the queue, so an outage is not a hot loop, the
# pause backing off with jitter from 1 s to 10 s and the outage logged once, not per delivery. The dead-letter
# queue has no delivery limit, so the message waits there for as long as it takes.
FIRST_PAUSE_SECONDS = 1.0
MOST_PAUSE_SECONDS = 10.0


async def raw_body(message: RabbitMessage) -> bytes:
    # Dead letters are often not JSON at all; decoding is the archiver's job, not FastStream's.
    return message.body


def dead_letter_queue(topology: Topology) -> RabbitQueue:
    # Declared exactly as declare_topology does (quorum, durable, no other arguments).
    return RabbitQueue(topology.dead_letter_queue, queue_type=QueueType.QUORUM, durable=True)


def register_archiver(broker: RabbitBroker, topology: Topology) -> None:
    outage = Outage("archiving dead letters", log, base=FIRST_PAUSE_SECONDS, cap=MOST_PAUSE_SECONDS)

    @broker.subscriber(
        dead_letter_queue(topology),
        ack_policy=AckPolicy.NACK_ON_ERROR,
        decoder=raw_body,
        title=topology.dead_letter_queue,
        description="Archives every dead letter in PostgreSQL (idempotently), then acks it.",
    )
    async def archive_dead_letter(body: bytes, message: RabbitMessage, archive: Archive) -> None:
        raw = message.raw_message
        incoming = IncomingDeadLetter(
            body=body,
            headers=dict(raw.headers or {}),
            message_id=raw.message_id,
            correlation_id=raw.correlation_id,
            user_id=raw.user_id,
            routing_key=raw.routing_key,
        )
        try:
            await archive.archive(incoming)
        except Exception as exc:
            log.info("could not store dead letter %s; returning it to the queue", raw.message_id)
            await asyncio.sleep(outage.failed(exc))
            # NackMessage: back to the queue without FastStream logging a traceback for every try.
            raise NackMessage(requeue=True) from exc
        outage.worked()

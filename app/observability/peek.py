"""`remit queues peek`: what waits in one of remit's queues, read where it is (the broker's own peek:
nothing is delivered, order and delivery counts stay as they were; app/messaging/broker_peek.py).

Each message's tenant is decided as the consumer decides it (app/tenancy/identity.py: the validated
user_id, then a trusted publisher's own headers, else the routing key), never from the body. The broker
shows at most a body's first 64 bytes; for a message remit published itself (relay, retry, replay) whose
body starts as the outbox row of the same tenant and message_id does, the payment is described from that
row. Account numbers are masked either way.
"""

import asyncio
import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from sqlalchemy import Row, select, tuple_

from app.deadletters.masking import mask_account, mask_text
from app.messaging.broker_peek import BrokerPeek, PeekedMessage
from app.storage.tables import outbox
from app.storage.unit_of_work import UnitOfWorkFactory
from app.tenancy.identity import TRUSTED, Attribution, PublisherIdentity

Known = dict[tuple[str | None, UUID | None], Row[Any]]  # outbox rows by (tenant, message_id)
PARALLEL_CALLS = 4  # each call starts the broker's CLI (about 0.4 s of CPU): a few at a time
_CUT_DIGITS = re.compile(r"\d+$")  # digits at the cut: maybe the start of an account number


@dataclass(frozen=True, slots=True)
class PeekRequest:
    queue: str
    tenant: str | None  # None: every tenant's
    limit: int  # show at most this many
    scan: int  # read at most this many positions from the head


@dataclass(frozen=True, slots=True)
class PeekedPayment:
    position: int
    message_id: str | None
    tenant: str | None
    basis: str  # how the tenant was decided (app/tenancy/identity.py)
    published_by: str | None  # the user_id RabbitMQ validated
    timestamp: datetime | None
    age_seconds: float | None
    delivery_count: int
    payment: dict[str, Any] | None  # from the outbox, accounts masked
    body_prefix: str  # what the broker shows of the body, masked


@dataclass(frozen=True, slots=True)
class Peeked:
    payments: list[PeekedPayment]
    scanned: int  # positions read
    end_of_queue: bool  # the scan reached the tail


async def peek_queue(
    peek: BrokerPeek,
    identity: PublisherIdentity,
    uow: UnitOfWorkFactory,
    vhost: str,
    request: PeekRequest,
    now: datetime,
) -> Peeked:
    """Read from the head, a few positions at a time, until `limit` messages of the tenant (of anyone's,
    without one) are found, `scan` positions are read, or the queue ends."""
    found: list[tuple[PeekedMessage, Attribution]] = []
    scanned, end = 0, False
    while scanned < request.scan and len(found) < request.limit and not end:
        positions = range(scanned + 1, min(scanned + PARALLEL_CALLS, request.scan) + 1)
        for message in await asyncio.gather(*(peek.at(vhost, request.queue, p) for p in positions)):
            if message is None:
                end = True
                break
            scanned = message.position
            attribution = identity.attribute(message.user_id, message.routing_key, message.headers)
            if (request.tenant is None or attribution.tenant == request.tenant) and len(found) < request.limit:
                found.append((message, attribution))
    known = await _outbox_rows(uow, [(m, a) for m, a in found if a.basis == TRUSTED])
    return Peeked([_describe(m, a, known, now) for m, a in found], scanned, end)


async def _outbox_rows(uow: UnitOfWorkFactory, trusted: list[tuple[PeekedMessage, Attribution]]) -> Known:
    keys = {(a.tenant, uuid) for m, a in trusted if a.tenant and (uuid := _uuid(m.message_id))}
    if not keys:
        return {}
    query = select(outbox).where(tuple_(outbox.c.tenant_id, outbox.c.message_id).in_(keys))
    async with uow() as u:  # operators: the system scope
        return {(r.tenant_id, r.message_id): r for r in await u.connection.execute(query)}


def _describe(message: PeekedMessage, attribution: Attribution, known: Known, now: datetime) -> PeekedPayment:
    row = known.get((attribution.tenant, _uuid(message.message_id)))
    from_outbox = row is not None and row.body.decode("utf-8", "replace").startswith(message.body_prefix)
    return PeekedPayment(
        position=message.position,
        message_id=message.message_id,
        tenant=attribution.tenant,
        basis=attribution.basis,
        published_by=message.user_id,
        timestamp=message.timestamp,
        age_seconds=max((now - message.timestamp).total_seconds(), 0.0) if message.timestamp else None,
        delivery_count=message.delivery_count,
        payment=_payment(row) if from_outbox and row is not None else None,
        body_prefix=masked_prefix(message.body_prefix),
    )


def _payment(row: Row[Any]) -> dict[str, Any]:
    body = json.loads(row.body)
    return {
        "payment_reference": row.payment_reference,
        "amount_cents": row.amount_cents,
        "currency": row.currency,
        "correlation_id": row.correlation_id,
        "debtor": f"{body.get('debtor_bsb', '')} {mask_account(str(body.get('debtor_account', '')))}",
        "creditor": f"{body.get('creditor_bsb', '')} {mask_account(str(body.get('creditor_account', '')))}",
    }


def masked_prefix(prefix: str) -> str:
    return _CUT_DIGITS.sub(lambda m: "*" * len(m.group()), mask_text(prefix))


def _uuid(value: str | None) -> UUID | None:
    try:
        return UUID(value) if value else None
    except ValueError:
        return None

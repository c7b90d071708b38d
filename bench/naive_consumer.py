"""The naive baseline: a FastStream consumer doing ONE PostgreSQL transaction per message.

Same idempotency record and ledger row as remit (processed_messages ON CONFLICT DO NOTHING, then the
ledger insert), pydantic validation of the same contract, ack after commit. Run it like the service:
`python -m faststream run naive_consumer:app --app-dir bench` with REMIT_DATABASE_URL / REMIT_AMQP_URL set.
"""

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from faststream import AckPolicy, ContextRepo, FastStream
from faststream.rabbit import RabbitBroker, RabbitQueue
from faststream.rabbit.annotations import RabbitMessage
from faststream.rabbit.schemas import Channel
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from contracts import PaymentMessage

PREFETCH = int(os.environ.get("NAIVE_PREFETCH", "64"))
# DEBUG like remit's own broker: per-message INFO log lines would handicap the baseline, not the design.
broker = RabbitBroker(
    os.environ["REMIT_AMQP_URL"], default_channel=Channel(prefetch_count=PREFETCH), log_level=logging.DEBUG
)
engine: AsyncEngine = create_async_engine(os.environ["REMIT_DATABASE_URL"], pool_size=20, max_overflow=0)

CLAIM = text(
    "INSERT INTO processed_messages (message_id, tenant_id, correlation_id, attempt) "
    "VALUES (:id, :tenant, :batch, 1) ON CONFLICT (tenant_id, message_id) DO NOTHING RETURNING message_id"
)
BOOK = text(
    "INSERT INTO ledger (message_id, tenant_id, correlation_id, payment_reference, amount_cents, currency,"
    " debtor_bsb, debtor_account, creditor_bsb, creditor_account) VALUES (:id, :tenant, :batch, :ref, :cents,"
    " :cur, :dbsb, :dacc, :cbsb, :cacc)"
)


async def raw_body(message: RabbitMessage) -> bytes:
    return message.body  # as remit does: the strict contract parses the JSON bytes itself


@broker.subscriber(
    RabbitQueue("payments.work.enterprise", declare=False), ack_policy=AckPolicy.NACK_ON_ERROR, decoder=raw_body
)
async def handle(body: bytes) -> None:
    p = PaymentMessage.from_wire(body)
    async with engine.begin() as conn:
        claimed = await conn.execute(CLAIM, {"id": p.message_id, "tenant": p.tenant_id, "batch": p.correlation_id})
        if claimed.first() is not None:
            await conn.execute(
                BOOK,
                {
                    "id": p.message_id,
                    "tenant": p.tenant_id,
                    "batch": p.correlation_id,
                    "ref": p.payment_reference,
                    "cents": p.amount_cents,
                    "cur": p.currency,
                    "dbsb": p.debtor_bsb,
                    "dacc": p.debtor_account,
                    "cbsb": p.creditor_bsb,
                    "cacc": p.creditor_account,
                },
            )


@asynccontextmanager
async def lifespan(context: ContextRepo) -> AsyncIterator[None]:
    try:
        yield
    finally:
        await engine.dispose()


app = FastStream(broker, lifespan=lifespan)

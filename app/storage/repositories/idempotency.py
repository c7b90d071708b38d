"""The idempotency records in PostgreSQL: the group commit's claim is one `unnest` insert per tenant share."""

from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict
from uuid import UUID

from sqlalchemy import bindparam, delete, select, text
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.driver import driver_of, joined, split
from app.storage.ports.idempotency import CoreTransfer, NewKeyGeneration
from app.storage.tables import processed_messages, transfer_key_generations
from contracts import PaymentMessage

pm = processed_messages.c

# One statement, each column one joined text parameter (the digests: one array), on asyncpg's connection
# (app/storage/driver.py): an executemany renders a multi-row VALUES, SQLAlchemy's array binding runs a
# processor per element, and asyncpg's runs two class checks per element; each costs more CPU than the rest
# of the commit (docs/benchmarks.md).
# `source` says how the payment came: a batch's has its outbox row (same tenant); one published directly over
# AMQP has none, and this record, with what it moved, is its only record of acceptance (reconciliation and
# `remit status` count it as accepted over AMQP). The outbox lookup is one probe of its unique message_id index.
_CLAIM = f"""
    INSERT INTO processed_messages
        (message_id, tenant_id, correlation_id, attempt, payment_digest, amount_cents, currency, source)
    SELECT u.*, CASE WHEN EXISTS (SELECT 1 FROM outbox o WHERE o.message_id = u.id AND o.tenant_id = u.tenant)
                     THEN 'outbox' ELSE 'amqp' END
    FROM unnest({split(1, "uuid")}, {split(2, "varchar")}, {split(3, "varchar")}, {split(4, "int")}, $5::bytea[],
                {split(6, "bigint")}, {split(7, "varchar")})
        AS u(id, tenant, batch, attempt, digest, amount, currency)
    ON CONFLICT (tenant_id, message_id) DO NOTHING
    RETURNING message_id
"""
_DIGESTS = text(
    "SELECT message_id, payment_digest FROM processed_messages WHERE tenant_id = :tenant AND message_id = ANY(:ids)"
).bindparams(bindparam("ids", type_=ARRAY(PG_UUID(as_uuid=True))))
# One probe of the primary key per payment; the table holds a row only for a payment a forced replay sent anew.
_GENERATIONS = text(
    "SELECT message_id, max(generation) AS generation FROM transfer_key_generations "
    "WHERE tenant_id = :tenant AND message_id = ANY(:ids) GROUP BY message_id"
).bindparams(bindparam("ids", type_=ARRAY(PG_UUID(as_uuid=True))))
# What an external core said of a flush's bookings, beside the records, on asyncpg's connection like the claim:
# the ids and generations as joined columns, the transfer ids (the core's text, any text) and times as arrays.
_TRANSFERS = f"""
    UPDATE processed_messages p
    SET core_transfer_id = t.transfer_id, core_booked_at = t.booked_at, core_key_generation = t.generation
    FROM unnest({split(2, "uuid")}, $3::text[], $4::timestamptz[], {split(5, "int")})
        AS t(message_id, transfer_id, booked_at, generation)
    WHERE p.tenant_id = $1 AND p.message_id = t.message_id
"""


class SqlIdempotencyRecords:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def claim(self, payments: Sequence[PaymentMessage], digests: Sequence[bytes]) -> set[UUID]:
        # In message_id order: two transactions claiming overlapping ids then wait on the first shared one only,
        # never on each other (the committer runs several flushes at once). By `.int`, UUID's own order without
        # a Python-level `__lt__` per comparison.
        pairs = sorted(zip(payments, digests, strict=True), key=lambda pair: pair[0].message_id.int)
        payments, digests = [p for p, _ in pairs], [d for _, d in pairs]
        driver = await driver_of(self._connection)
        rows = await driver.fetch(
            _CLAIM,
            joined(p.message_id.hex for p in payments),
            joined(p.tenant_id for p in payments),
            joined(p.correlation_id for p in payments),
            joined(p.retry_count + 1 for p in payments),
            list(digests),
            joined(p.amount_cents for p in payments),
            joined(p.currency for p in payments),
        )
        return {row[0] for row in rows}

    async def digests(self, tenant_id: str, message_ids: Collection[UUID]) -> dict[UUID, bytes | None]:
        rows = await self._connection.execute(_DIGESTS, {"tenant": tenant_id, "ids": list(message_ids)})
        return {row.message_id: row.payment_digest for row in rows}

    async def release(self, tenant_id: str, message_ids: Collection[UUID]) -> None:
        await self._connection.execute(
            delete(processed_messages).where(pm.tenant_id == tenant_id, pm.message_id.in_(list(message_ids)))
        )

    async def record_transfers(self, tenant_id: str, transfers: Mapping[UUID, CoreTransfer]) -> None:
        values = list(transfers.values())
        driver = await driver_of(self._connection)
        await driver.execute(
            _TRANSFERS,
            tenant_id,
            joined(m.hex for m in transfers),
            [t.transfer_id for t in values],
            [t.booked_at for t in values],
            joined(t.key_generation for t in values),
        )

    async def key_generations(self, tenant_id: str, message_ids: Collection[UUID]) -> dict[UUID, int]:
        rows = await self._connection.execute(_GENERATIONS, {"tenant": tenant_id, "ids": list(message_ids)})
        return {row.message_id: int(row.generation) for row in rows}

    async def open_key_generation(self, generation: NewKeyGeneration) -> bool:
        statement = insert(transfer_key_generations).values(**asdict(generation)).on_conflict_do_nothing()
        return bool((await self._connection.execute(statement)).rowcount)

    async def is_recorded(self, tenant_id: str, message_id: UUID) -> bool:
        query = select(pm.message_id).where(pm.tenant_id == tenant_id, pm.message_id == message_id)
        return (await self._connection.execute(query)).first() is not None

"""remit against the reference core in tests: payments between the core's accounts, what remit recorded, what the
core holds per key, what is left on the dead-letter queue."""

from typing import Any

import asyncpg
from aio_pika.abc import AbstractChannel
from sqlalchemy import text

from app.settings import Settings
from app.storage.unit_of_work import UnitOfWorkFactory
from tests.utils.corebank import Acct, dsn
from tests.utils.factories import make_wire_dict


def wire_for(tenant: str, debtor: Acct, creditor: Acct, amount: int, **extra: Any) -> dict[str, Any]:
    return make_wire_dict(
        tenant_id=tenant,
        amount_cents=amount,
        currency=debtor.currency,
        debtor_bsb=debtor.bsb,
        debtor_account=debtor.number,
        creditor_bsb=creditor.bsb,
        creditor_account=creditor.number,
        **extra,
    )


async def remit_records(uow: UnitOfWorkFactory, tenant: str) -> list[Any]:
    """processed_messages joined with remit's ledger: (message_id, core_transfer_id, booked in remit's ledger)."""
    query = text(
        "SELECT p.message_id, p.core_transfer_id, l.message_id IS NOT NULL AS in_ledger FROM processed_messages p "
        "LEFT JOIN ledger l USING (tenant_id, message_id) WHERE p.tenant_id = :t"
    )
    async with uow() as u:
        return list((await u.connection.execute(query, {"t": tenant})).all())


async def core_keys(database_url: str) -> dict[str, tuple[str, str | None]]:
    """The core's outcome per idempotency key: (status, transfer id)."""
    conn = await asyncpg.connect(dsn(database_url))
    try:
        rows = await conn.fetch("SELECT idempotency_key, status, transfer_id::text FROM transfers")
    finally:
        await conn.close()
    return {r[0]: (r[1], r[2]) for r in rows}


async def dead_letters_left(channel: AbstractChannel, settings: Settings) -> int:
    queue = await channel.get_queue(settings.dead_letter_queue)
    left = 0
    while await queue.get(no_ack=True, fail=False) is not None:
        left += 1
    return left

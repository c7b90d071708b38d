"""remit's ledger in PostgreSQL: a group's transfers booked with one `unnest` insert."""

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncConnection

from app.storage.driver import driver_of, joined, split
from contracts import PaymentMessage

_TEXT_COLUMNS = (
    "tenant_id",
    "correlation_id",
    "payment_reference",
    "currency",
    "debtor_bsb",
    "debtor_account",
    "creditor_bsb",
    "creditor_account",
)
# One statement, each column one joined text parameter, on asyncpg's connection (app/storage/driver.py):
# SQLAlchemy's executemany renders a multi-row VALUES with ten parameters per row, its array binding runs a
# processor per element, and asyncpg's runs two class checks per element; each costs more CPU than the rest of
# the commit (docs/benchmarks.md). No ON CONFLICT: the ledger's unique (tenant_id, message_id) is the last
# guard against paying twice. A copy of a payment whose idempotency record retention purged is refused here,
# and the committer isolates it (a poison row).
_TEXT_ARRAYS = ", ".join(split(n, "varchar") for n in range(3, 3 + len(_TEXT_COLUMNS)))
_BOOK = f"""
    INSERT INTO ledger (message_id, amount_cents, {", ".join(_TEXT_COLUMNS)})
    SELECT * FROM unnest({split(1, "uuid")}, {split(2, "bigint")}, {_TEXT_ARRAYS})
"""


class SqlLedger:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def book(self, payments: Sequence[PaymentMessage]) -> None:
        driver = await driver_of(self._connection)
        columns = [joined(getattr(p, name) for p in payments) for name in _TEXT_COLUMNS]
        ids, amounts = joined(p.message_id.hex for p in payments), joined(p.amount_cents for p in payments)
        await driver.execute(_BOOK, ids, amounts, *columns)

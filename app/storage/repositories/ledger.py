"""remit's ledger in PostgreSQL: a group's transfers booked with one `unnest` insert."""

from collections.abc import Sequence

from sqlalchemy import bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY, BIGINT, VARCHAR
from sqlalchemy.dialects.postgresql import UUID as PG_UUID
from sqlalchemy.ext.asyncio import AsyncConnection

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
# One statement with one array per column: SQLAlchemy's executemany renders a multi-row VALUES with ten
# parameters per row, which cost more CPU than the rest of the commit (docs/benchmarks.md). No ON CONFLICT:
# the ledger's unique (tenant_id, message_id) is the last guard against paying twice. A copy of a payment
# whose idempotency record retention purged is refused here, and the committer isolates it (a poison row).
_BOOK = text(
    f"""
    INSERT INTO ledger (message_id, amount_cents, {", ".join(_TEXT_COLUMNS)})
    SELECT * FROM unnest(:message_id, :amount_cents, {", ".join(f":{c}" for c in _TEXT_COLUMNS)})
    """
).bindparams(
    bindparam("message_id", type_=ARRAY(PG_UUID(as_uuid=True))),
    bindparam("amount_cents", type_=ARRAY(BIGINT)),
    *(bindparam(c, type_=ARRAY(VARCHAR)) for c in _TEXT_COLUMNS),
)


class SqlLedger:
    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection

    async def book(self, payments: Sequence[PaymentMessage]) -> None:
        columns: dict[str, list[object]] = {
            "message_id": [p.message_id for p in payments],
            "amount_cents": [p.amount_cents for p in payments],
        }
        for name in _TEXT_COLUMNS:
            columns[name] = [getattr(p, name) for p in payments]
        await self._connection.execute(_BOOK, columns)

"""What is recorded under a key: the transfer it was used for and its outcome (the `transfers` table)."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import RowMapping, text
from sqlalchemy.ext.asyncio import AsyncConnection

from corebank.schemas import ISO_REASON, Conflict, Party, Reason, TransferRequest


@dataclass(frozen=True, slots=True)
class Outcome:
    """A key's answer: booked, rejected (with a reason), or a conflict (nothing done for this request)."""

    key: str
    status: Literal["booked", "rejected", "conflict"]
    replayed: bool = False
    transfer_id: int | None = None
    reason: Reason | None = None
    party: Party | None = None
    conflict: Conflict | None = None
    recorded_at: datetime | None = None

    @property
    def recorded_now(self) -> bool:
        return self.status != "conflict" and not self.replayed

    def fields(self) -> dict[str, object]:
        """The outcome as the API's result models name their fields."""
        return {
            "idempotency_key": self.key,
            "status": self.status,
            "replayed": self.replayed,
            "transfer_id": None if self.transfer_id is None else str(self.transfer_id),
            "reason": self.reason,
            "iso_reason": ISO_REASON[self.reason] if self.reason else None,
            "party": self.party,
            "conflict": self.conflict,
            "recorded_at": self.recorded_at,
        }


@dataclass(frozen=True, slots=True)
class Recorded:
    request: TransferRequest
    outcome: Outcome


_REQUEST_COLUMNS = tuple(TransferRequest.model_fields)  # each field is a column of `transfers`
_SELECT = text(
    f"""
    SELECT idempotency_key, status, transfer_id, reason, party, recorded_at, {", ".join(_REQUEST_COLUMNS)}
    FROM transfers WHERE idempotency_key = ANY(CAST(:keys AS text[]))
    """
)


async def recorded(conn: AsyncConnection, keys: Sequence[str]) -> dict[str, Recorded]:
    if not keys:
        return {}
    rows = (await conn.execute(_SELECT, {"keys": list(keys)})).mappings()
    return {row["idempotency_key"]: _from_row(row) for row in rows}


def _from_row(row: RowMapping) -> Recorded:
    booked = row["status"] == "booked"
    outcome = Outcome(
        key=row["idempotency_key"],
        status=row["status"],
        replayed=True,
        transfer_id=row["transfer_id"] if booked else None,
        reason=None if booked else Reason(row["reason"]),
        party=row["party"],
        recorded_at=row["recorded_at"],
    )
    return Recorded(TransferRequest.model_validate({c: row[c] for c in _REQUEST_COLUMNS}), outcome)

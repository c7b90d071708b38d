"""Book a batch of transfers in the caller's transaction.

Claim every key (advisory locks: a key another request is booking is a conflict, not a wait) and, in the
same statement, lock every account the claimed keys' transfers touch in account_id order (concurrent batches
then never deadlock); answer the recorded keys from their record (read after the claim, in a statement of its
own: its snapshot must be younger than the locks, or a booking committed meanwhile would be missed); decide
each transfer in request order against running balances, and write the outcomes, the postings and the
balances in one statement. Four round trips to PostgreSQL with BEGIN and COMMIT, whatever the batch's size.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from corebank import keys
from corebank.records import Outcome, Recorded, recorded
from corebank.schemas import BatchTransfer, Party, Reason, TransferRequest


@dataclass(slots=True)
class _Holding:
    account_id: int
    status: str
    balance_cents: int


@dataclass(frozen=True, slots=True)
class _Accounts:
    holdings: dict[tuple[str, str, str], _Holding]  # (bsb, account_number, currency)
    known: set[tuple[str, str]]  # (bsb, account_number) held in any currency


@dataclass(frozen=True, slots=True)
class _Decision:
    transfer: BatchTransfer
    refusal: tuple[Reason, Party] | None = None
    sides: tuple[_Holding, _Holding] | None = None  # (debtor, creditor) when booked


@dataclass(frozen=True, slots=True)
class _Booked:
    transfer: BatchTransfer
    debtor: _Holding
    creditor: _Holding


async def book(conn: AsyncConnection, batch: Sequence[BatchTransfer]) -> list[Outcome]:
    """One outcome per transfer, in order. The caller commits."""
    busy, accounts = await _claim_and_lock(conn, batch)
    earlier = await recorded(conn, [t.idempotency_key for t in batch if t.idempotency_key not in busy])
    fresh = [t for t in batch if t.idempotency_key not in busy and t.idempotency_key not in earlier]
    new = await _book_fresh(conn, fresh, accounts) if fresh else {}
    return [_answer(t, busy, earlier, new) for t in batch]


def _answer(t: BatchTransfer, busy: set[str], earlier: dict[str, Recorded], new: dict[str, Outcome]) -> Outcome:
    key = t.idempotency_key
    if key in busy:
        return Outcome(key, "conflict", conflict="in_progress")
    if key in earlier:
        same = earlier[key].request == TransferRequest.model_validate(t.model_dump(exclude={"idempotency_key"}))
        return earlier[key].outcome if same else Outcome(key, "conflict", conflict="request_mismatch")
    return new[key]


async def _book_fresh(conn: AsyncConnection, fresh: list[BatchTransfer], accounts: _Accounts) -> dict[str, Outcome]:
    decisions = [_decide(t, accounts) for t in fresh]
    written = await _write(conn, decisions)
    return {o.key: o for o in written}


# The claim is materialized once (each key's try-lock runs exactly once); the accounts of the claimed keys'
# transfers (a replay's too: harmless, it is answered from its record) are locked in account_id order. The
# busy keys ride on every row, and on a row of NULL accounts when nothing is to be locked.
_CLAIM_AND_LOCK = text(
    f"""
    WITH claimed AS MATERIALIZED (
        SELECT c.*, {keys.TRY_CLAIM.format(key="c.k")} AS mine
        FROM unnest(CAST(:keys AS text[]), CAST(:debtor_bsbs AS text[]), CAST(:debtor_numbers AS text[]),
                    CAST(:creditor_bsbs AS text[]), CAST(:creditor_numbers AS text[]))
            AS c(k, debtor_bsb, debtor_number, creditor_bsb, creditor_number)
    ), busy AS (
        SELECT coalesce(array_agg(k) FILTER (WHERE NOT mine), '{{}}') AS keys FROM claimed
    )
    SELECT busy.keys AS busy, a.* FROM busy LEFT JOIN LATERAL (
        SELECT a.account_id, a.bsb, a.account_number, a.currency, a.status, a.balance_cents
        FROM accounts a
        WHERE (a.bsb, a.account_number) IN (
            SELECT debtor_bsb, debtor_number FROM claimed WHERE mine
            UNION SELECT creditor_bsb, creditor_number FROM claimed WHERE mine
        )
        ORDER BY a.account_id
        FOR UPDATE OF a
    ) a ON true
    """
)


async def _claim_and_lock(conn: AsyncConnection, batch: Sequence[BatchTransfer]) -> tuple[set[str], _Accounts]:
    params = {
        "keys": [t.idempotency_key for t in batch],
        "debtor_bsbs": [t.debtor_bsb for t in batch],
        "debtor_numbers": [t.debtor_account for t in batch],
        "creditor_bsbs": [t.creditor_bsb for t in batch],
        "creditor_numbers": [t.creditor_account for t in batch],
        "space": keys.SPACE,
    }
    rows = (await conn.execute(_CLAIM_AND_LOCK, params)).all()
    busy = set(rows[0].busy)
    holdings = {
        (r.bsb, r.account_number, r.currency): _Holding(r.account_id, r.status, r.balance_cents)
        for r in rows
        if r.account_id is not None
    }
    return busy, _Accounts(holdings, {(bsb, number) for bsb, number, _ in holdings})


def _decide(t: BatchTransfer, accounts: _Accounts) -> _Decision:
    parties: tuple[tuple[Party, str, str], ...] = (
        ("debtor", t.debtor_bsb, t.debtor_account),
        ("creditor", t.creditor_bsb, t.creditor_account),
    )
    sides: list[_Holding] = []
    for party, bsb, number in parties:
        holding = accounts.holdings.get((bsb, number, t.currency))
        if holding is None:
            missing = Reason.CURRENCY_NOT_HELD if (bsb, number) in accounts.known else Reason.UNKNOWN_ACCOUNT
            return _Decision(t, refusal=(missing, party))
        if holding.status != "open":
            return _Decision(t, refusal=(Reason.ACCOUNT_CLOSED, party))
        sides.append(holding)
    debtor, creditor = sides
    if debtor.balance_cents < t.amount_cents:
        return _Decision(t, refusal=(Reason.INSUFFICIENT_FUNDS, "debtor"))
    debtor.balance_cents -= t.amount_cents
    creditor.balance_cents += t.amount_cents
    return _Decision(t, sides=(debtor, creditor))


_TRANSFER_COLUMNS = {
    column: "bigint" if column == "amount_cents" else "text"
    for column in ("idempotency_key", "status", "reason", "party", *TransferRequest.model_fields)
}
# One statement for the three tables (data-modifying CTEs), one array per column: a batch of any size costs
# one round trip to write. The postings name their transfer by key; the transfers' insert returns the ids.
_WRITE = text(
    f"""
    WITH t AS (
        INSERT INTO transfers ({", ".join(_TRANSFER_COLUMNS)}, txid)
        SELECT {", ".join(_TRANSFER_COLUMNS)}, pg_current_xact_id()::text::bigint
        FROM unnest({", ".join(f"CAST(:{c} AS {t}[])" for c, t in _TRANSFER_COLUMNS.items())})
            WITH ORDINALITY AS t({", ".join(_TRANSFER_COLUMNS)}, n)
        ORDER BY n
        RETURNING idempotency_key, transfer_id, recorded_at
    ), postings AS (
        INSERT INTO journal (transfer_id, account_id, side, amount_cents, currency)
        SELECT t.transfer_id, p.account_id, p.side, p.amount_cents, p.currency
        FROM unnest(CAST(:posting_keys AS text[]), CAST(:account_ids AS bigint[]), CAST(:sides AS text[]),
                    CAST(:amounts AS bigint[]), CAST(:currencies AS text[]))
            WITH ORDINALITY AS p(idempotency_key, account_id, side, amount_cents, currency, n)
        JOIN t ON t.idempotency_key = p.idempotency_key
        ORDER BY p.n
    ), balances AS (
        UPDATE accounts a SET balance_cents = a.balance_cents + d.delta
        FROM unnest(CAST(:delta_accounts AS bigint[]), CAST(:deltas AS bigint[])) AS d(account_id, delta)
        WHERE a.account_id = d.account_id
    )
    SELECT idempotency_key, transfer_id, recorded_at FROM t
    """
)


async def _write(conn: AsyncConnection, decisions: list[_Decision]) -> list[Outcome]:
    booked = [_Booked(d.transfer, *d.sides) for d in decisions if d.sides is not None]
    rows = await conn.execute(_WRITE, {**_transfer_columns(decisions), **_postings(booked), **_deltas(booked)})
    ids = {r.idempotency_key: (r.transfer_id, r.recorded_at) for r in rows}
    return [_outcome(d, *ids[d.transfer.idempotency_key]) for d in decisions]


def _transfer_columns(decisions: list[_Decision]) -> dict[str, list[object]]:
    columns: dict[str, list[object]] = {c: [] for c in _TRANSFER_COLUMNS}
    for d in decisions:
        row = d.transfer.model_dump()
        row["status"] = "booked" if d.refusal is None else "rejected"
        row["reason"], row["party"] = d.refusal or (None, None)
        for column, values in columns.items():
            values.append(row[column])
    return columns


def _postings(booked: list[_Booked]) -> dict[str, list[object]]:
    columns: dict[str, list[object]] = {
        c: [] for c in ("posting_keys", "account_ids", "sides", "amounts", "currencies")
    }
    for d in booked:
        for side, holding in (("debit", d.debtor), ("credit", d.creditor)):
            columns["posting_keys"].append(d.transfer.idempotency_key)
            columns["account_ids"].append(holding.account_id)
            columns["sides"].append(side)
            columns["amounts"].append(d.transfer.amount_cents)
            columns["currencies"].append(d.transfer.currency)
    return columns


def _deltas(booked: list[_Booked]) -> dict[str, list[int]]:
    deltas: dict[int, int] = {}
    for d in booked:
        deltas[d.debtor.account_id] = deltas.get(d.debtor.account_id, 0) - d.transfer.amount_cents
        deltas[d.creditor.account_id] = deltas.get(d.creditor.account_id, 0) + d.transfer.amount_cents
    return {"delta_accounts": list(deltas), "deltas": list(deltas.values())}


def _outcome(d: _Decision, transfer_id: int, recorded_at: datetime) -> Outcome:
    key = d.transfer.idempotency_key
    if d.refusal is None:
        return Outcome(key, "booked", transfer_id=transfer_id, recorded_at=recorded_at)
    reason, party = d.refusal
    return Outcome(key, "rejected", reason=reason, party=party, recorded_at=recorded_at)

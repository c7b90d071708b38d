"""Property: over random sequences of transfers, single and in batches, with keys repeated (same request or
another), the core answers what an independent model of the bank predicts, books exactly one journal transfer
per booked key, and keeps the books: for every currency debits = credits; every balance = opening + credits -
debits."""

from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.utils.corebank import Acct, CoreBank, balance, check_ledger, fresh_account, fresh_key, open_account

pytestmark = pytest.mark.integration

# The accounts of one example: (AUD opening, USD opening or None, status); the last is never opened.
BOOK = [(1_000, 500, "open"), (300, None, "open"), (1_000, None, "closed"), (0, 0, "open"), None]
CURRENCIES = ("AUD", "USD")


@dataclass(frozen=True)
class Step:
    key: int  # from a small pool: keys repeat
    debtor: int
    creditor: int
    amount: int
    currency: str


steps = st.builds(
    Step,
    key=st.integers(0, 7),
    debtor=st.integers(0, len(BOOK) - 1),
    creditor=st.integers(0, len(BOOK) - 1),
    amount=st.integers(1, 700),
    currency=st.sampled_from(CURRENCIES),
).filter(lambda s: s.debtor != s.creditor)
operations = st.lists(
    st.one_of(
        steps.map(lambda s: [s]),
        st.lists(steps, min_size=2, max_size=6, unique_by=lambda s: s.key),
    ),
    min_size=1,
    max_size=10,
)


@dataclass
class Model:
    """The bank as plain dicts, deciding each transfer the way the contract says."""

    balances: dict[tuple[int, str], int] = field(default_factory=dict)
    closed: set[int] = field(default_factory=set)
    outcomes: dict[int, tuple[Step, tuple[str, str | None, str | None]]] = field(default_factory=dict)

    def apply(self, s: Step) -> tuple[str, str | None, str | None, bool]:
        if s.key in self.outcomes:
            first, outcome = self.outcomes[s.key]
            same = (first.debtor, first.creditor, first.amount, first.currency) == (
                s.debtor,
                s.creditor,
                s.amount,
                s.currency,
            )
            return (*outcome, True) if same else ("conflict", "request_mismatch", None, False)
        outcome = self._decide(s)
        self.outcomes[s.key] = (s, outcome)
        return (*outcome, False)

    def _decide(self, s: Step) -> tuple[str, str | None, str | None]:
        for party, who in (("debtor", s.debtor), ("creditor", s.creditor)):
            if (who, s.currency) not in self.balances:
                held = any((who, c) in self.balances for c in CURRENCIES)
                return "rejected", "currency_not_held" if held else "unknown_account", party
            if who in self.closed:
                return "rejected", "account_closed", party
        if self.balances[(s.debtor, s.currency)] < s.amount:
            return "rejected", "insufficient_funds", "debtor"
        self.balances[(s.debtor, s.currency)] -= s.amount
        self.balances[(s.creditor, s.currency)] += s.amount
        return "booked", None, None


async def open_book(client: httpx.AsyncClient, model: Model) -> list[Acct]:
    accounts = []
    for i, entry in enumerate(BOOK):
        acct = fresh_account()
        if entry is not None:
            aud, usd, status = entry
            await open_account(client, aud, status=status, like=acct)
            model.balances[(i, "AUD")] = aud
            if usd is not None:
                await open_account(client, usd, currency="USD", like=acct)
                model.balances[(i, "USD")] = usd
            if status == "closed":
                model.closed.add(i)
        accounts.append(acct)
    return accounts


def body(s: Step, accounts: list[Acct], keys: list[str]) -> dict[str, Any]:
    d, c = accounts[s.debtor], accounts[s.creditor]
    return {
        "idempotency_key": keys[s.key],
        "amount_cents": s.amount,
        "currency": s.currency,
        "debtor_bsb": d.bsb,
        "debtor_account": d.number,
        "creditor_bsb": c.bsb,
        "creditor_account": c.number,
    }


async def send(client: httpx.AsyncClient, op: list[Step], accounts: list[Acct], keys: list[str]) -> list[Any]:
    """The answers as (status, reason or conflict, party, replayed, transfer id)."""
    bodies = [body(s, accounts, keys) for s in op]
    if len(op) > 1:
        results = (await client.post("/transfers/batch", json={"transfers": bodies})).json()["results"]
    else:
        key = bodies[0].pop("idempotency_key")
        response = await client.post("/transfers", json=bodies[0], headers={"Idempotency-Key": key})
        if response.status_code == 422:
            assert response.json()["error"]["code"] == "idempotency_key_reused"
            return [("conflict", "request_mismatch", None, False, None)]
        assert response.status_code == (200 if response.json()["replayed"] else 201)
        results = [response.json()]
    return [
        (r["status"], r["reason"] or r.get("conflict"), r["party"], r["replayed"], r["transfer_id"]) for r in results
    ]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
async def test_the_core_books_what_the_model_predicts_and_keeps_the_books(
    ops: list[list[Step]], client: httpx.AsyncClient, core: CoreBank
) -> None:
    model = Model()
    accounts = await open_book(client, model)
    keys = [fresh_key() for _ in range(8)]
    transfer_ids: dict[int, str] = {}

    for op in ops:
        answers = await send(client, op, accounts, keys)
        for s, (status, why, party, replayed, transfer_id) in zip(op, answers, strict=True):
            assert (status, why, party, replayed) == model.apply(s), s
            if status == "booked":
                assert transfer_ids.setdefault(s.key, transfer_id) == transfer_id, "a booked key changed transfer"

    for (i, currency), expected in model.balances.items():
        assert await balance(client, Acct(accounts[i].bsb, accounts[i].number, currency)) == expected
    booked = [k for k, (_, outcome) in model.outcomes.items() if outcome[0] == "booked"]
    statuses = await client.post("/transfers/status", json={"idempotency_keys": keys})
    assert sorted(i for i, r in enumerate(statuses.json()["results"]) if r["status"] == "booked") == sorted(booked)
    assert len({transfer_ids[k] for k in booked}) == len(booked)
    await check_ledger(core.database_url)

"""Which status a message gets: the precedence of docs/reconciliation.md as an ordered list of rules, the first
that holds wins, over the message's aggregates (classify.py `_per_message`).

The rules are written once, over values that only need comparison, `+`, `&`, `|` and `~`: Spark builds its one
CASE expression from them with columns (classify.py), and a test evaluates the very same rules on a table of
cases with pandas' nullable arrays (tests/spark/test_status_precedence.py), whose missing values follow SQL's
three-valued logic as Spark's nulls do. So the classification is tested, and mutation-tested (pyproject.toml
[tool.mutmut]), without starting Spark once per case; a Spark test checks that both readings agree.

`m` has an attribute per aggregate: counts (n_outbox, n_direct, n_ledger, n_processed, n_remit_core, n_dead,
n_expired, n_core, n_core_late), what was accepted (o_amount, o_ccy_h, o_expires), the ledger's range
(l_amount_min/max, l_ccy_min/max), the core's transfer (c_amount, c_ccy_h, c_ref_h, c_ref_min) and remit's record
of it (p_ref_h). Names are 64-bit hashes (names.py); o_expires is compared only with `ttl_edge`.
"""

from typing import Any

from reconciliation import statuses as st

Rule = tuple[Any, str | None]  # (condition, status); None: not reconciled (never accepted, no money moved)
OTHERWISE = st.MISSING  # no rule holds: accepted, no terminal state, past TTL + grace


def core_transfers(m: Any) -> Any:
    """How many transfers the core's journal holds under the key, late ones included."""
    return m.n_core + m.n_core_late


def in_core(m: Any) -> Any:
    """The core booked it: by the as-of time, or just after for a payment remit recorded by then
    (core_journal.py)."""
    return (m.n_core > 0) | ((m.n_core_late > 0) & (m.n_remit_core > 0))


def status_rules(m: Any, ttl_edge: Any, with_core: bool) -> list[Rule]:
    """The rules in precedence order. `ttl_edge` is as_of - grace: a message whose TTL ends after it is still in
    flight. `with_core`: the run read the external core's journal (three-way)."""
    differs = (
        (m.l_amount_min != m.o_amount)
        | (m.l_amount_max != m.o_amount)
        | (m.l_ccy_min != m.o_ccy_h)
        | (m.l_ccy_max != m.o_ccy_h)
    )
    accepted = (m.n_outbox > 0) | (m.n_direct > 0)
    recorded_in_core = m.n_remit_core > 0  # remit's record names the external core's transfer
    booked_in_core = in_core(m)
    within_ttl = m.o_expires > ttl_edge
    terminal = (m.n_dead > 0) | (m.n_expired > 0)
    rules: list[Rule] = []
    if with_core:
        # Two transfers with different ids under one key, whenever booked: the core moved the money more than
        # once, and nothing else may hide it (issue 37, B). Two rows of one transfer are one transfer.
        rules.append(((core_transfers(m) > 1) & (m.c_ref_min != m.c_ref_h), st.CORE_DUPLICATE))
    rules += [
        (((m.n_ledger > 0) | recorded_in_core) & ~accepted, st.UNEXPECTED),
        ((m.n_ledger > 0) & differs, st.MISMATCH),
        # Twice in the ledger, or booked in the embedded ledger and in the core: money moved more than once.
        # A ledger row whose record names the core's transfer is remit's copy of that transfer, not a second.
        ((m.n_ledger > 1) | ((m.n_ledger > 0) & booked_in_core & ~recorded_in_core), st.DUPLICATE),
    ]
    if with_core:
        # Booked in the core, not recorded by remit yet, but still inside its TTL with no record and no dead
        # letter: the redelivery will ask the core and record its transfer (the in-doubt being resolved).
        resolving = accepted & (m.n_processed == 0) & ~terminal & within_ttl
        core_differs = (m.c_amount != m.o_amount) | (m.c_ccy_h != m.o_ccy_h) | (m.c_ref_h != m.p_ref_h)
        rules += [
            (booked_in_core & ~recorded_in_core & ~resolving, st.CORE_ONLY),
            (recorded_in_core & ~booked_in_core, st.REMIT_ONLY),
            (recorded_in_core & core_differs, st.CORE_MISMATCH),
        ]
    return [
        *rules,
        ((m.n_ledger == 1) | recorded_in_core, st.PROCESSED),
        (~accepted, None),
        (m.n_dead > 0, st.DEAD_LETTERED),
        (m.n_expired > 0, st.EXPIRED),
        # An idempotency row means redeliveries are skipped: no money will ever move.
        (m.n_processed > 0, st.MISSING),
        (within_ttl, st.IN_FLIGHT),
    ]

"""The message statuses' precedence (reconciliation/precedence.py) on a table of cases, each a message's aggregates
as the job's group-by makes them: evaluated with pandas' nullable arrays (SQL's three-valued logic, no Spark: this
is what mutmut runs, pyproject.toml [tool.mutmut]), and once through Spark's CASE expression, which must agree.

Each case sits at an edge of one rule: just inside it and just outside, one operand of a condition at a time.
"""

from typing import Any

import pandas as pd
import pytest

from reconciliation import statuses as st
from reconciliation.precedence import OTHERWISE, status_rules

EDGE = 1_000  # as_of - grace: a TTL ending after it is still running
COUNTS = ("n_outbox", "n_direct", "n_ledger", "n_processed", "n_remit_core", "n_dead", "n_expired", "n_core",
          "n_core_late")  # fmt: skip
VALUES = ("o_amount", "o_ccy_h", "o_expires", "l_amount_min", "l_amount_max", "l_ccy_min", "l_ccy_max", "c_amount",
          "c_ccy_h", "c_ref_h", "c_ref_min", "p_ref_h")  # fmt: skip

Aggregates = dict[str, int | None]
ACCEPTED: Aggregates = {"n_outbox": 1, "o_amount": 500, "o_ccy_h": 36, "o_expires": 900}  # its TTL over
BOOKED: Aggregates = {**ACCEPTED, "n_ledger": 1, "n_processed": 1, "l_amount_min": 500, "l_amount_max": 500,
                      "l_ccy_min": 36, "l_ccy_max": 36}  # fmt: skip
IN_CORE: Aggregates = {**ACCEPTED, "n_processed": 1, "n_remit_core": 1, "p_ref_h": 7, "n_core": 1, "c_amount": 500,
                       "c_ccy_h": 36, "c_ref_h": 7, "c_ref_min": 7}  # fmt: skip
UNRECORDED: Aggregates = {**ACCEPTED, "n_core": 1, "c_amount": 500, "c_ccy_h": 36, "c_ref_h": 7, "c_ref_min": 7}

# (case, aggregates, three-way, expected status)
CASES: list[tuple[str, Aggregates, bool, str | None]] = [
    ("booked once", BOOKED, False, st.PROCESSED),
    ("a direct publish booked once", {**BOOKED, "n_outbox": 0, "n_direct": 1, "o_expires": None}, False, st.PROCESSED),
    ("a ledger row, nothing accepted", {"n_ledger": 1, "l_amount_min": 5, "l_amount_max": 5}, False, st.UNEXPECTED),
    ("a record of a core transfer, nothing accepted", {"n_processed": 1, "n_remit_core": 1}, False, st.UNEXPECTED),
    ("the ledger's lowest amount differs", {**BOOKED, "l_amount_min": 499}, False, st.MISMATCH),
    ("the ledger's highest amount differs", {**BOOKED, "l_amount_max": 501}, False, st.MISMATCH),
    ("the ledger's lowest currency differs", {**BOOKED, "l_ccy_min": 35}, False, st.MISMATCH),
    ("the ledger's highest currency differs", {**BOOKED, "l_ccy_max": 37}, False, st.MISMATCH),
    ("two ledger rows", {**BOOKED, "n_ledger": 2}, False, st.DUPLICATE),
    ("two ledger rows, one of another amount: a mismatch", {**BOOKED, "n_ledger": 2, "l_amount_max": 501}, False,
     st.MISMATCH),
    ("dead-lettered", {**ACCEPTED, "n_dead": 1}, False, st.DEAD_LETTERED),
    ("dead-lettered and expired", {**ACCEPTED, "n_dead": 1, "n_expired": 1}, False, st.DEAD_LETTERED),
    ("expired", {**ACCEPTED, "n_expired": 1}, False, st.EXPIRED),
    ("dead-lettered, then booked", {**BOOKED, "n_dead": 1}, False, st.PROCESSED),
    ("an idempotency record, no money", {**ACCEPTED, "n_processed": 1, "o_expires": 2_000}, False, st.MISSING),
    ("no terminal state, TTL running", {**ACCEPTED, "o_expires": 1_001}, False, st.IN_FLIGHT),
    ("no terminal state, TTL ending at the edge", {**ACCEPTED, "o_expires": 1_000}, False, st.MISSING),
    ("a dead letter of a message never accepted", {"n_dead": 1}, False, None),
    ("an idempotency record of a message never accepted", {"n_processed": 1}, False, None),
    ("two-way: a recorded core transfer is processed", {**IN_CORE, "n_core": 0, "c_amount": None}, False,
     st.PROCESSED),
    # Three-way: the external core's journal.
    ("booked in both", IN_CORE, True, st.PROCESSED),
    ("booked in both, remit's ledger copy beside", {**IN_CORE, **{k: v for k, v in BOOKED.items() if k[0] == "l"},
     "n_ledger": 1}, True, st.PROCESSED),
    ("two transfers under one key", {**IN_CORE, "n_core": 2, "c_ref_min": 6}, True, st.CORE_DUPLICATE),
    ("two transfers, the second after the as-of time", {**IN_CORE, "n_core_late": 1, "c_ref_min": 6}, True,
     st.CORE_DUPLICATE),
    ("two transfers under a key never accepted", {"n_core": 2, "c_ref_h": 7, "c_ref_min": 6}, True,
     st.CORE_DUPLICATE),
    ("two transfers, a ledger row of another amount", {**BOOKED, "n_core": 2, "c_ref_h": 7, "c_ref_min": 6,
     "l_amount_min": 1}, True, st.CORE_DUPLICATE),
    ("one transfer the export listed twice", {**IN_CORE, "n_core": 2}, True, st.PROCESSED),
    ("booked in the ledger and in the core", {**BOOKED, "n_core": 1, "c_ref_h": 7, "c_ref_min": 7}, True,
     st.DUPLICATE),
    ("in the core only, its TTL over", UNRECORDED, True, st.CORE_ONLY),
    ("in the core only, its TTL running: resolving", {**UNRECORDED, "o_expires": 1_001}, True, st.IN_FLIGHT),
    ("in the core only, TTL running, dead-lettered", {**UNRECORDED, "o_expires": 1_001, "n_dead": 1}, True,
     st.CORE_ONLY),
    ("in the core only, TTL running, expired", {**UNRECORDED, "o_expires": 1_001, "n_expired": 1}, True,
     st.CORE_ONLY),
    ("in the core only, TTL running, recorded without its id", {**UNRECORDED, "o_expires": 1_001, "n_processed": 1},
     True, st.CORE_ONLY),
    ("in the core only under a key never accepted", {"n_core": 1, "c_ref_h": 7, "c_ref_min": 7}, True, st.CORE_ONLY),
    ("only just after the as-of time, unrecorded", {**UNRECORDED, "n_core": 0, "n_core_late": 1, "o_expires": 1_001},
     True, st.IN_FLIGHT),
    ("only just after the as-of time, recorded", {**IN_CORE, "n_core": 0, "n_core_late": 1}, True, st.PROCESSED),
    # Not yet in the core at the as-of time, and nothing of remit's says it should be: the payment is missing.
    ("only just after the as-of time, unrecorded, TTL over", {**UNRECORDED, "n_core": 0, "n_core_late": 1}, True,
     st.MISSING),
    ("recorded by remit, not in the core", {**IN_CORE, "n_core": 0, "c_amount": None, "c_ccy_h": None,
     "c_ref_h": None, "c_ref_min": None}, True, st.REMIT_ONLY),
    ("the core's amount differs", {**IN_CORE, "c_amount": 501}, True, st.CORE_MISMATCH),
    ("the core's currency differs", {**IN_CORE, "c_ccy_h": 35}, True, st.CORE_MISMATCH),
    ("the core's transfer id differs", {**IN_CORE, "c_ref_h": 8, "c_ref_min": 8}, True, st.CORE_MISMATCH),
]  # fmt: skip


def aggregates(cases: list[tuple[str, Aggregates, bool, str | None]]) -> pd.DataFrame:
    """One row per case: counts 0 unless given, every other aggregate missing unless given (nullable Int64)."""
    rows = [{**dict.fromkeys(COUNTS, 0), **dict.fromkeys(VALUES), **values} for _, values, _, _ in cases]
    return pd.DataFrame(rows, columns=[*COUNTS, *VALUES]).astype("Int64")


def evaluated(frame: pd.DataFrame, with_core: bool) -> list[str | None]:
    """The first rule that holds, as Spark's CASE picks it: a missing (NULL) condition does not hold."""
    found: pd.Series[Any] = pd.Series([OTHERWISE] * len(frame), index=frame.index, dtype=object)
    decided = pd.Series(False, index=frame.index)
    for condition, status in status_rules(frame, EDGE, with_core):
        holds = condition.fillna(False).astype(bool) & ~decided
        found[holds] = status
        decided |= holds
    return list(found)


@pytest.mark.parametrize("with_core", [False, True])
def test_each_case_gets_its_status(with_core: bool) -> None:
    cases = [case for case in CASES if case[2] == with_core]
    got = evaluated(aggregates(cases), with_core)
    assert dict(zip((c[0] for c in cases), got, strict=True)) == {name: want for name, _, _, want in cases}


def test_a_two_way_run_never_reads_the_core() -> None:
    # A two-way run has no core rows (classify.py: its core counts are 0); were the three-way rules applied to a
    # core count anyway, a recorded transfer would be remit_only.
    frame = aggregates([("", {**IN_CORE, "n_core": 0}, False, None)])
    assert evaluated(frame, with_core=False) == [st.PROCESSED]
    assert evaluated(frame, with_core=True) == [st.REMIT_ONLY]


@pytest.mark.spark
def test_spark_reads_the_rules_as_the_table_does(spark: Any) -> None:
    """The one CASE expression Spark builds from the same rules gives every case the same status."""
    from pyspark.sql import functions as F

    from reconciliation.classify import status_column

    for with_core in (False, True):
        cases = [case for case in CASES if case[2] == with_core]
        frame = aggregates(cases)
        rows = [tuple(None if pd.isna(v) else int(v) for v in row) for row in frame.itertuples(index=False)]
        df = spark.createDataFrame(rows, ", ".join(f"{c} bigint" for c in frame.columns))
        statuses = [r[0] for r in df.select(status_column(F.lit(EDGE), with_core)).collect()]
        assert statuses == evaluated(frame, with_core) == [want for _, _, _, want in cases]

"""One test per batch state, control totals included."""

from datetime import timedelta
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from tests.spark.builders import Snapshot, mid
from tests.spark.helpers import run, summary

pytestmark = pytest.mark.spark

_COLUMNS = "correlation_id string, currency string, state string"


def _states(spark: SparkSession, snap: Snapshot, tmp_path: Path, expected: list[tuple[str, str, str]]) -> None:
    actual = summary(spark, snap, tmp_path).select("correlation_id", "currency", "state")
    assertDataFrameEqual(actual, spark.createDataFrame(expected, _COLUMNS))


def test_reconciled(spark: SparkSession, tmp_path: Path) -> None:
    snap = Snapshot().accept(1).book(1).accept(2).dead_letter(2, "invalid").accept(3).dead_letter(3, "expired")
    _states(spark, snap, tmp_path, [("batch-1", "AUD", "RECONCILED")])


def test_pending(spark: SparkSession, tmp_path: Path) -> None:
    snap = Snapshot().accept(1).book(1).accept(2)
    _states(spark, snap, tmp_path, [("batch-1", "AUD", "PENDING")])


def test_breaks_from_a_missing_message(spark: SparkSession, tmp_path: Path) -> None:
    snap = Snapshot().accept(1).book(1).accept(2, age=timedelta(days=2))
    _states(spark, snap, tmp_path, [("batch-1", "AUD", "BREAKS")])


def test_breaks_from_control_totals(spark: SparkSession, tmp_path: Path) -> None:
    snap = Snapshot().accept(1).book(1).totals("batch-1", "AUD", control_cents=999)
    _states(spark, snap, tmp_path, [("batch-1", "AUD", "BREAKS")])


def test_control_totals_absent_are_not_a_break(spark: SparkSession, tmp_path: Path) -> None:
    snap = Snapshot().accept(1).book(1).totals("batch-1", "AUD", control_count=None, control_cents=None)
    _states(spark, snap, tmp_path, [("batch-1", "AUD", "RECONCILED")])


def test_batch_state_is_the_worst_currency(spark: SparkSession, tmp_path: Path) -> None:
    snap = Snapshot().accept(1).book(1).accept(2, ccy="USD").book(2, ccy="USD").accept(3, ccy="NZD")
    result = run(spark, snap, tmp_path)
    rows = result.summary.select(["currency", "state", "batch_state"]).to_pylist()
    assert sorted((r["currency"], r["state"], r["batch_state"]) for r in rows) == [
        ("AUD", "RECONCILED", "PENDING"),
        ("NZD", "PENDING", "PENDING"),
        ("USD", "RECONCILED", "PENDING"),
    ]
    assert result.result == "PENDING"


def test_counts_and_cents_per_status(spark: SparkSession, tmp_path: Path) -> None:
    snap = Snapshot().accept(1, amount=100).book(1, amount=100).accept(2, amount=250).book(2, amount=250)
    snap.accept(3, amount=7).book(3, amount=8).book(4, amount=40)
    result = run(spark, snap, tmp_path)
    (row,) = result.summary.to_pylist()
    assert (row["processed_count"], row["processed_cents"]) == (2, 350)
    assert (row["mismatch_count"], row["mismatch_cents"]) == (1, 7)
    assert (row["unexpected_count"], row["unexpected_cents"]) == (1, 40)
    assert (row["accepted_count"], row["accepted_cents"]) == (3, 357)
    assert sorted(result.breaks["status"].to_pylist()) == ["mismatch", "unexpected"]
    assert result.result == "BREAKS"


def test_another_tenants_rows_naming_a_batch_do_not_change_its_state(spark: SparkSession, tmp_path: Path) -> None:
    """A direct publisher chooses its correlation_id freely: its unexpected booking under the victim's batch
    id is a break of the attacker's own, and the victim's batch stays reconciled."""
    snap = Snapshot().accept(1).book(1).book(1, tenant="tenant-b").book(2, tenant="tenant-b")
    result = run(spark, snap, tmp_path)
    rows = result.summary.select(["correlation_id", "tenant_id", "state", "batch_state", "processed_count"])
    assert sorted(tuple(r.values()) for r in rows.to_pylist()) == [
        ("batch-1", "tenant-a", "RECONCILED", "RECONCILED", 1),
        ("batch-1", "tenant-b", "BREAKS", "BREAKS", 0),
    ]
    assert (result.batches_in("RECONCILED"), result.batches_in("BREAKS")) == (1, 1)
    assert sorted(zip(result.breaks["tenant_id"].to_pylist(), result.breaks["status"].to_pylist(), strict=True)) == [
        ("tenant-b", "unexpected"),
        ("tenant-b", "unexpected"),
    ]


def _direct_booked(snap: Snapshot, n: int, corr: str, amount: int = 1000) -> Snapshot:
    """A direct publish booked in the embedded ledger: the ledger row and the consumer's record of it."""
    snap.book(n, corr=corr, amount=amount)
    snap.rows["processed_messages"].pop()
    return snap.direct(n, corr=corr, amount=amount)


def test_a_clean_day_of_direct_publishing_reconciles(spark: SparkSession, tmp_path: Path) -> None:
    snap = _direct_booked(_direct_booked(Snapshot(), 1, "direct-1"), 2, "direct-1", amount=250)

    result = run(spark, snap, tmp_path)

    assert result.result == "RECONCILED"
    row = result.summary.to_pylist()[0]
    assert (row["accepted_count"], row["accepted_cents"], row["amqp_count"], row["amqp_cents"]) == (2, 1250, 2, 1250)
    assert (row["processed_count"], row["unexpected_count"], row["totals_ok"]) == (2, 0, True)


def test_direct_publishes_naming_a_batch_leave_its_control_totals_alone(spark: SparkSession, tmp_path: Path) -> None:
    snap = _direct_booked(Snapshot().accept(1).book(1), 2, "batch-1", amount=7)

    row = run(spark, snap, tmp_path).summary.to_pylist()[0]

    assert (row["state"], row["accepted_count"], row["amqp_count"], row["totals_ok"]) == ("RECONCILED", 2, 1, True)


def test_three_way_counts_and_detail_lines(spark: SparkSession, tmp_path: Path) -> None:
    snap = (
        Snapshot()
        .accept(1, amount=500).recorded_in_core(1, "T1").core(1, "T1", amount=500)
        .accept(2, amount=600).dead_letter(2, "retries_exhausted").core(2, "T2", amount=600)
        .accept(3, amount=700).recorded_in_core(3, "T3")
        .accept(4, amount=800).recorded_in_core(4, "T4").core(4, "T4", amount=801)
    )  # fmt: skip

    result = run(spark, snap, tmp_path)

    assert result.result == "BREAKS"
    row = result.summary.to_pylist()[0]
    counts = {k: row[k] for k in ("core_booked_count", "core_booked_cents", "core_only_count", "remit_only_count",
                                  "core_mismatch_count", "break_count")}  # fmt: skip
    assert counts == {"core_booked_count": 1, "core_booked_cents": 500, "core_only_count": 1, "remit_only_count": 1,
                      "core_mismatch_count": 1, "break_count": 3}  # fmt: skip
    details = dict(zip(result.breaks["status"].to_pylist(), result.breaks["detail"].to_pylist(), strict=True))
    assert details == {
        "core_only": "core transfer 600 AUD; remit has no record of it (an unknown outcome never resolved, or a key "
        "remit never accepted)",
        "remit_only": "remit recorded a core transfer for 700 AUD; the core's journal has none",
        "core_mismatch": "remit 800 AUD; core 801 AUD",
    }


def test_two_way_detail_lines(spark: SparkSession, tmp_path: Path) -> None:
    # Expired 0.75 s past a whole second: the line shows the second it began in (not the nearest one).
    age = timedelta(days=2, microseconds=-750_000)
    snap = (
        Snapshot()
        .accept(1, amount=500).book(1, amount=501)
        .accept(2, amount=600).book(2, amount=600).book(2, amount=600)
        .book(3, amount=700)
        .accept(4, amount=800, age=age)
        .accept(5, amount=900).idempotency_only(5)
    )  # fmt: skip

    breaks = run(spark, snap, tmp_path).breaks
    lines = zip(*(breaks[c].to_pylist() for c in ("message_id", "status", "detail")), strict=True)

    assert {message_id: (status, detail) for message_id, status, detail in lines} == {
        mid(1): ("mismatch", "outbox 500 AUD; 1 ledger row(s), first 501 AUD"),
        mid(2): ("duplicate", "2 ledger rows for one message"),
        mid(3): ("unexpected", "1 ledger row(s), no outbox row"),
        mid(4): ("missing", "no terminal state; expired 2025-05-01T00:00:00Z"),
        mid(5): ("missing", "idempotency record without ledger row or dead letter"),
    }


def test_a_key_booked_twice_in_the_core_is_a_break_duplicate_count_counts(spark: SparkSession, tmp_path: Path) -> None:
    # Issue 37, B: a core that booked keys twice left duplicate_count at 0 and the batch RECONCILED where remit's
    # record named one of the two transfers.
    snap = (
        Snapshot()
        .accept(1, amount=500).recorded_in_core(1, "T1").core(1, "T1", amount=500)
        .core(1, "T1-again", amount=500, at=timedelta(minutes=30))
        .accept(2, amount=600).book(2, amount=600).book(2, amount=600)
        .accept(3, amount=700).recorded_in_core(3, "T3").core(3, "T3", amount=700)
    )  # fmt: skip

    result = run(spark, snap, tmp_path)

    assert result.result == "BREAKS"
    [row] = result.summary.to_pylist()
    counts = {k: row[k] for k in ("core_duplicate_count", "core_duplicate_cents", "duplicate_count", "duplicate_cents",
                                  "processed_count", "core_booked_count", "break_count")}  # fmt: skip
    assert counts == {"core_duplicate_count": 1, "core_duplicate_cents": 500, "duplicate_count": 2,
                      "duplicate_cents": 1100, "processed_count": 1, "core_booked_count": 1,
                      "break_count": 2}  # fmt: skip
    assert result.message_count == 3  # each message once, though duplicate_count counts the core's too
    lines = zip(*(result.breaks[c].to_pylist() for c in ("message_id", "status", "detail")), strict=True)
    assert {message_id: (status, detail) for message_id, status, detail in lines} == {
        mid(1): ("core_duplicate", "2 transfers in the core's journal under one key (the largest 500 AUD); accepted "
                 "500 AUD"),
        mid(2): ("duplicate", "2 ledger rows for one message"),
    }  # fmt: skip

"""One test per batch state, control totals included."""

from datetime import timedelta
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from tests.spark.builders import Snapshot
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

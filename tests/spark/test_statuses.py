"""One test per message status, and the precedence between them."""

from datetime import timedelta
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.testing import assertDataFrameEqual

from tests.spark.builders import GRACE, TTL, Snapshot, mid
from tests.spark.helpers import classified

pytestmark = pytest.mark.spark


def _check(
    spark: SparkSession, snap: Snapshot, tmp_path: Path, expected: list[tuple[int, str | None, str | None]]
) -> None:
    actual = classified(spark, snap, tmp_path).select("message_id", "status", "reason")
    rows = [(mid(n), status, reason) for n, status, reason in expected]
    assertDataFrameEqual(actual, spark.createDataFrame(rows, "message_id string, status string, reason string"))


def test_processed(spark: SparkSession, tmp_path: Path) -> None:
    _check(spark, Snapshot().accept(1).book(1), tmp_path, [(1, "processed", None)])


def test_unexpected_ledger_row_without_outbox(spark: SparkSession, tmp_path: Path) -> None:
    _check(spark, Snapshot().book(1), tmp_path, [(1, "unexpected", None)])


def test_mismatch_on_amount_and_on_currency(spark: SparkSession, tmp_path: Path) -> None:
    snap = Snapshot().accept(1, amount=1000).book(1, amount=1001).accept(2, ccy="AUD").book(2, ccy="NZD")
    _check(spark, snap, tmp_path, [(1, "mismatch", None), (2, "mismatch", None)])


def test_duplicate_ledger_rows(spark: SparkSession, tmp_path: Path) -> None:
    _check(spark, Snapshot().accept(1).book(1).book(1), tmp_path, [(1, "duplicate", None)])


def test_mismatch_wins_over_duplicate(spark: SparkSession, tmp_path: Path) -> None:
    _check(spark, Snapshot().accept(1).book(1).book(1, amount=5), tmp_path, [(1, "mismatch", None)])


def test_dead_lettered_with_latest_reason(spark: SparkSession, tmp_path: Path) -> None:
    snap = (
        Snapshot()
        .accept(1)
        .dead_letter(1, "retries_exhausted", status="replayed", at=timedelta(hours=2))
        .dead_letter(1, "permanent_failure", at=timedelta(hours=1))
    )
    _check(spark, snap, tmp_path, [(1, "dead_lettered", "permanent_failure")])


def test_expired(spark: SparkSession, tmp_path: Path) -> None:
    _check(spark, Snapshot().accept(1).dead_letter(1, "expired"), tmp_path, [(1, "expired", "expired")])


def test_replayed_then_booked_is_processed(spark: SparkSession, tmp_path: Path) -> None:
    snap = Snapshot().accept(1).dead_letter(1, "retries_exhausted", status="replayed").book(1)
    _check(spark, snap, tmp_path, [(1, "processed", None)])


def test_in_flight_inside_ttl_plus_grace(spark: SparkSession, tmp_path: Path) -> None:
    # Expired 10 minutes ago, still inside the 15-minute grace.
    _check(spark, Snapshot().accept(1, age=TTL + timedelta(minutes=10)), tmp_path, [(1, "in_flight", None)])


def test_replayed_without_booking_is_not_terminal(spark: SparkSession, tmp_path: Path) -> None:
    snap = Snapshot().accept(1).dead_letter(1, "retries_exhausted", status="replayed")
    _check(spark, snap, tmp_path, [(1, "in_flight", None)])


def test_missing_past_ttl_plus_grace(spark: SparkSession, tmp_path: Path) -> None:
    _check(spark, Snapshot().accept(1, age=TTL + GRACE + timedelta(minutes=1)), tmp_path, [(1, "missing", None)])


def test_idempotency_record_without_money_is_missing(spark: SparkSession, tmp_path: Path) -> None:
    _check(spark, Snapshot().accept(1).idempotency_only(1), tmp_path, [(1, "missing", None)])


def test_dead_letter_never_accepted_is_unmatched(spark: SparkSession, tmp_path: Path) -> None:
    _check(spark, Snapshot().dead_letter(1, "invalid"), tmp_path, [(1, None, None)])

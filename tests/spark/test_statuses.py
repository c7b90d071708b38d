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


# Two tenants, one message_id: a message is (tenant_id, message_id), so each tenant's copy stands alone.
VICTIM, ATTACKER = "tenant-a", "tenant-b"


def _check_per_tenant(
    spark: SparkSession, snap: Snapshot, tmp_path: Path, expected: list[tuple[str, int, str | None]]
) -> None:
    actual = classified(spark, snap, tmp_path).select("tenant_id", "message_id", "status")
    rows = [(tenant, mid(n), status) for tenant, n, status in expected]
    assertDataFrameEqual(actual, spark.createDataFrame(rows, "tenant_id string, message_id string, status string"))


def test_another_tenants_booking_of_the_same_id_does_not_settle_a_lost_payment(
    spark: SparkSession, tmp_path: Path
) -> None:
    # The victim's payment was never booked; the attacker books its own under the same id and amount.
    snap = Snapshot().accept(1, age=TTL + GRACE + timedelta(minutes=1)).book(1, corr="b-batch", tenant=ATTACKER)
    _check_per_tenant(spark, snap, tmp_path, [(VICTIM, 1, "missing"), (ATTACKER, 1, "unexpected")])


def test_the_same_id_booked_by_each_tenant_is_two_payments_not_a_duplicate(spark: SparkSession, tmp_path: Path) -> None:
    snap = Snapshot().accept(1).book(1).accept(2, corr="b-batch", tenant=ATTACKER).book(1, tenant=ATTACKER)
    _check_per_tenant(spark, snap, tmp_path, [(VICTIM, 1, "processed"), (ATTACKER, 1, "unexpected"),
                                              (ATTACKER, 2, "in_flight")])  # fmt: skip


def test_another_tenants_dead_letter_or_idempotency_record_of_the_same_id_settles_nothing(
    spark: SparkSession, tmp_path: Path
) -> None:
    snap = (
        Snapshot().accept(1).dead_letter(1, "invalid", tenant=ATTACKER).accept(2).idempotency_only(2, tenant=ATTACKER)
    )
    _check_per_tenant(
        spark,
        snap,
        tmp_path,
        [(VICTIM, 1, "in_flight"), (VICTIM, 2, "in_flight"), (ATTACKER, 1, None), (ATTACKER, 2, None)],
    )


# Three-way: an external core's journal against remit's records (docs/reconciliation.md).


def test_booked_in_both_is_processed(spark: SparkSession, tmp_path: Path) -> None:
    snap = Snapshot().accept(1).recorded_in_core(1, "T1").core(1, "T1")
    _check(spark, snap, tmp_path, [(1, "processed", None)])


def test_in_the_core_only_after_the_payment_was_dead_lettered(spark: SparkSession, tmp_path: Path) -> None:
    snap = Snapshot().accept(1).dead_letter(1, "retries_exhausted").core(1, "T1")
    _check(spark, snap, tmp_path, [(1, "core_only", None)])


def test_in_the_core_only_under_a_key_remit_never_accepted(spark: SparkSession, tmp_path: Path) -> None:
    _check(spark, Snapshot().core(1, "T1"), tmp_path, [(1, "core_only", None)])


def test_in_the_core_unrecorded_inside_ttl_is_in_flight_until_ttl_then_core_only(
    spark: SparkSession, tmp_path: Path
) -> None:
    snap = Snapshot().accept(1).core(1, "T1").accept(2, age=TTL + GRACE + timedelta(minutes=1)).core(2, "T2")
    _check(spark, snap, tmp_path, [(1, "in_flight", None), (2, "core_only", None)])


def test_recorded_by_remit_but_not_in_the_core(spark: SparkSession, tmp_path: Path) -> None:
    snap = Snapshot(three_way=True).accept(1).recorded_in_core(1, "T1")
    _check(spark, snap, tmp_path, [(1, "remit_only", None)])


def test_amount_currency_or_transfer_id_differ_from_the_core(spark: SparkSession, tmp_path: Path) -> None:
    snap = (
        Snapshot()
        .accept(1, amount=1000).recorded_in_core(1, "T1").core(1, "T1", amount=1001)
        .accept(2, ccy="AUD").recorded_in_core(2, "T2").core(2, "T2", ccy="NZD")
        .accept(3).recorded_in_core(3, "T3").core(3, "T9")
    )  # fmt: skip
    _check(spark, snap, tmp_path, [(1, "core_mismatch", None), (2, "core_mismatch", None), (3, "core_mismatch", None)])


def test_booked_in_the_ledger_and_in_the_core_is_a_duplicate(spark: SparkSession, tmp_path: Path) -> None:
    _check(spark, Snapshot().accept(1).book(1).core(1, "T1"), tmp_path, [(1, "duplicate", None)])


def test_a_ledger_row_beside_the_cores_transfer_id_is_remits_copy_of_it(spark: SparkSession, tmp_path: Path) -> None:
    # The external adapter books a local ledger row for each transfer the core booked (its id on the record).
    snap = Snapshot().accept(1).book(1).core(1, "T1")
    snap.rows["processed_messages"].pop()
    snap.recorded_in_core(1, "T1").accept(2, amount=5).book(2, amount=5).core(2, "T2", amount=6)
    snap.rows["processed_messages"].pop()
    snap.recorded_in_core(2, "T2")
    _check(spark, snap, tmp_path, [(1, "processed", None), (2, "core_mismatch", None)])


def test_a_core_transfer_just_after_the_as_of_time_counts_only_for_what_remit_recorded(
    spark: SparkSession, tmp_path: Path
) -> None:
    after = -timedelta(minutes=5)
    snap = Snapshot().accept(1).recorded_in_core(1, "T1").core(1, "T1", at=after).accept(2).core(2, "T2", at=after)
    _check(spark, snap, tmp_path, [(1, "processed", None), (2, "in_flight", None)])


def test_a_key_the_core_booked_twice_is_a_core_duplicate_whatever_else_holds(
    spark: SparkSession, tmp_path: Path
) -> None:
    # Issue 37, B: with one transfer per key assumed, these were processed (1), core_mismatch (2: the max() of
    # the two amounts), core_only (3), in_flight (4) and core_only (5).
    again = timedelta(minutes=30)
    snap = (
        Snapshot()
        .accept(1).recorded_in_core(1, "T1").core(1, "T1").core(1, "T1-again", at=again)
        .accept(2).recorded_in_core(2, "T2").core(2, "T2").core(2, "T2-again", amount=2000, at=again)
        .accept(3).dead_letter(3, "retries_exhausted").core(3, "T3").core(3, "T3-again", at=again)
        .accept(4).core(4, "T4").core(4, "T4-again", at=-timedelta(minutes=5))  # the second after the as-of time
        .core(5, "T5").core(5, "T5-again")  # a key remit never accepted
        .accept(6).recorded_in_core(6, "T6").core(6, "T6").core(6, "T6")  # one transfer the export listed twice
    )  # fmt: skip
    expected: list[tuple[int, str | None, str | None]] = [(n, "core_duplicate", None) for n in range(1, 6)]
    _check(spark, snap, tmp_path, [*expected, (6, "processed", None)])


def test_without_the_core_journal_a_recorded_core_transfer_is_processed(spark: SparkSession, tmp_path: Path) -> None:
    # The embedded ledger's deployments have no such records; a run without a core URL cannot check them.
    _check(spark, Snapshot().accept(1).recorded_in_core(1, "T1"), tmp_path, [(1, "processed", None)])


# Direct publishes over AMQP: no outbox row; the idempotency record says what was accepted.


def test_a_direct_publish_booked_in_the_ledger_is_processed_not_unexpected(spark: SparkSession, tmp_path: Path) -> None:
    snap = Snapshot().book(1, corr="direct-1")
    snap.rows["processed_messages"].pop()
    snap.direct(1)
    _check(spark, snap, tmp_path, [(1, "processed", None)])


def test_a_direct_publish_booked_for_another_amount_is_a_mismatch(spark: SparkSession, tmp_path: Path) -> None:
    snap = Snapshot().book(1, corr="direct-1", amount=999)
    snap.rows["processed_messages"].pop()
    snap.direct(1, amount=1000)
    _check(spark, snap, tmp_path, [(1, "mismatch", None)])


def test_a_direct_publish_recorded_without_money_is_missing(spark: SparkSession, tmp_path: Path) -> None:
    _check(spark, Snapshot().direct(1), tmp_path, [(1, "missing", None)])

"""Random message lifecycles, reconciled by Spark and by a plain-Python oracle: they must agree."""

from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as s
from pyspark.sql import SparkSession

from tests.spark.builders import AS_OF, GRACE, TTL, Snapshot, mid
from tests.spark.helpers import run
from tests.spark.oracle import group_states, statuses

pytestmark = pytest.mark.spark

FATES = ("processed", "duplicate", "lost", "dead_lettered", "expired", "mismatch_amount", "mismatch_currency",
         "unexpected", "replayed_processed", "replayed_pending", "idempotent_only")  # fmt: skip

lifecycle = s.tuples(
    s.sampled_from(FATES),
    s.sampled_from(["batch-1", "batch-2"]),
    s.sampled_from(["AUD", "USD"]),
    s.integers(min_value=1, max_value=10**12),
    # Age around the TTL + grace edge, so in_flight and missing both show up.
    s.sampled_from([timedelta(hours=1), TTL + GRACE - timedelta(minutes=1), TTL + GRACE + timedelta(minutes=1)]),
    s.sampled_from(["invalid", "retries_exhausted", "tenant_mismatch"]),
)


def _build(lifecycles: list[tuple[str, str, str, int, timedelta, str]], broken_totals: bool) -> Snapshot:
    snap = Snapshot()
    for n, (fate, corr, ccy, amount, age, reason) in enumerate(lifecycles):
        if fate != "unexpected":
            snap.accept(n, corr=corr, amount=amount, ccy=ccy, age=age)
        if fate in ("processed", "replayed_processed", "unexpected", "duplicate"):
            snap.book(n, corr=corr, amount=amount, ccy=ccy)
        if fate == "duplicate":
            snap.book(n, corr=corr, amount=amount, ccy=ccy)
        if fate == "mismatch_amount":
            snap.book(n, corr=corr, amount=amount + 1, ccy=ccy)
        if fate == "mismatch_currency":
            snap.book(n, corr=corr, amount=amount, ccy="NZD")
        if fate in ("dead_lettered", "expired"):
            snap.dead_letter(n, "expired" if fate == "expired" else reason, corr=corr)
        if fate in ("replayed_processed", "replayed_pending"):
            snap.dead_letter(n, reason, status="replayed", corr=corr)
        if fate == "idempotent_only":
            snap.idempotency_only(n, corr=corr)
    if broken_totals and snap.rows["outbox"]:
        first = snap.rows["outbox"][0]
        snap.totals(first["correlation_id"], first["currency"], control_cents=-1)
    return snap


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lifecycles=s.lists(lifecycle, min_size=1, max_size=25), broken_totals=s.booleans())
def test_spark_agrees_with_the_oracle(
    spark: SparkSession,
    tmp_path_factory: pytest.TempPathFactory,
    lifecycles: list[tuple[str, str, str, int, timedelta, str]],
    broken_totals: bool,
) -> None:
    snap = _build(lifecycles, broken_totals)
    result = run(spark, snap, Path(tmp_path_factory.mktemp("prop")))

    expected = statuses(snap.rows, AS_OF, GRACE)
    breaks = dict(zip(result.breaks["message_id"].to_pylist(), result.breaks["status"].to_pylist(), strict=True))
    assert breaks == {m: st for m, st in expected.items() if st in ("unexpected", "mismatch", "duplicate", "missing")}
    for fate_status in ("processed", "dead_lettered", "expired", "in_flight"):
        want = sum(1 for st in expected.values() if st == fate_status)
        assert sum(result.summary[f"{fate_status}_count"].to_pylist()) == want, fate_status

    states = {(r["correlation_id"], r["currency"]): r["state"] for r in result.summary.to_pylist()}
    assert states == group_states(snap.rows, snap._batch_totals(), AS_OF, GRACE)
    assert set(expected) == {mid(n) for n in range(len(lifecycles))}

"""Random message lifecycles, reconciled by Spark and by a plain-Python oracle: they must agree."""

from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as s
from pyspark.sql import SparkSession

from tests.spark.builders import AS_OF, GRACE, TTL, Snapshot, mid
from tests.spark.helpers import run
from tests.spark.oracle import BREAKS, batch_states, group_states, statuses, totals_agree

pytestmark = pytest.mark.spark

FATES = ("processed", "duplicate", "lost", "dead_lettered", "expired", "mismatch_amount", "mismatch_currency",
         "unexpected", "replayed_processed", "replayed_pending", "idempotent_only",
         # direct publishes over AMQP (no outbox row): booked in the ledger, in the core, or not at all
         "direct_ledger", "direct_core", "direct_missing", "direct_mismatch",
         # an external core: its journal against remit's records, one kind of break each
         "core_booked", "core_booked_late", "core_in_doubt", "core_in_doubt_dead_lettered", "core_foreign",
         "core_late_unrecorded", "remit_only", "core_amount", "core_currency", "core_transfer_id",
         "ledger_and_core", "core_booked_with_ledger",
         # a core that books one key twice (issue 37, B): recorded once by remit, or not at all; and one transfer
         # its export lists twice, which is not a second booking
         "core_twice", "core_twice_unrecorded", "core_listed_twice")  # fmt: skip

# Two tenants drawing message numbers from a small range: the same message_id often belongs to both, and
# each tenant's copy must be reconciled as its own message.
TENANTS = ("tenant-a", "tenant-b")
lifecycle = s.tuples(
    s.sampled_from(FATES),
    s.sampled_from(TENANTS),
    s.integers(min_value=0, max_value=15),  # the message number: mid(n)
    s.sampled_from(["batch-1", "batch-2"]),
    s.sampled_from(["AUD", "USD"]),
    s.integers(min_value=1, max_value=10**12),
    # Age around the TTL + grace edge, so in_flight and missing both show up.
    s.sampled_from([timedelta(hours=1), TTL + GRACE - timedelta(minutes=1), TTL + GRACE + timedelta(minutes=1)]),
    s.sampled_from(["invalid", "retries_exhausted", "tenant_mismatch"]),
)
Lifecycle = tuple[str, str, int, str, str, int, timedelta, str]


def _build(lifecycles: list[Lifecycle], broken_totals: bool, three_way: bool) -> Snapshot:
    snap = Snapshot()
    for fate, tenant, n, batch, ccy, amount, age, reason in lifecycles:
        corr = f"{tenant}-{batch}"  # a batch id belongs to one tenant
        transfer = f"T{n}-{tenant}"
        if fate.startswith("direct_"):
            booked_amount = amount + 1 if fate == "direct_mismatch" else amount
            snap.direct(n, corr=f"{tenant}-direct", amount=amount, ccy=ccy, tenant=tenant,
                        transfer_id=transfer if fate == "direct_core" else None)  # fmt: skip
            if fate in ("direct_ledger", "direct_mismatch"):
                snap.book(n, amount=booked_amount, ccy=ccy, corr=f"{tenant}-direct", tenant=tenant)
                snap.rows["processed_messages"].pop()  # book() adds a plain record: the direct one stands
            if fate == "direct_core":
                snap.core(n, transfer, amount=amount, ccy=ccy, tenant=tenant)
            continue
        if fate not in ("unexpected", "core_foreign"):
            snap.accept(n, amount=amount, ccy=ccy, age=age, corr=corr, tenant=tenant)
        if fate in ("processed", "replayed_processed", "unexpected", "duplicate", "ledger_and_core"):
            snap.book(n, amount=amount, ccy=ccy, corr=corr, tenant=tenant)
        if fate == "duplicate":
            snap.book(n, amount=amount, ccy=ccy, corr=corr, tenant=tenant)
        if fate == "mismatch_amount":
            snap.book(n, amount=amount + 1, ccy=ccy, corr=corr, tenant=tenant)
        if fate == "mismatch_currency":
            snap.book(n, amount=amount, ccy="NZD", corr=corr, tenant=tenant)
        if fate in ("dead_lettered", "expired", "core_in_doubt_dead_lettered"):
            snap.dead_letter(n, "expired" if fate == "expired" else reason, corr=corr, tenant=tenant)
        if fate in ("replayed_processed", "replayed_pending"):
            snap.dead_letter(n, reason, status="replayed", corr=corr, tenant=tenant)
        if fate == "idempotent_only":
            snap.idempotency_only(n, corr=corr, tenant=tenant)
        if fate == "core_booked_with_ledger":  # the external adapter's local ledger row beside the core's id
            snap.book(n, amount=amount, ccy=ccy, corr=corr, tenant=tenant)
            snap.rows["processed_messages"].pop()
        if fate in ("core_booked", "core_booked_late", "remit_only", "core_amount", "core_currency",
                    "core_transfer_id", "core_booked_with_ledger", "core_twice", "core_listed_twice"):  # fmt: skip
            snap.recorded_in_core(n, transfer, corr=corr, tenant=tenant)
        if fate in ("core_booked", "ledger_and_core", "core_in_doubt", "core_in_doubt_dead_lettered", "core_foreign",
                    "core_booked_with_ledger", "core_twice", "core_twice_unrecorded", "core_listed_twice"):  # fmt: skip
            snap.core(n, transfer, amount, ccy, tenant)
        if fate in ("core_twice", "core_twice_unrecorded"):  # the second transfer a while after the first
            snap.core(n, f"{transfer}-again", amount, ccy, tenant, at=timedelta(minutes=30))
        if fate == "core_listed_twice":
            snap.core(n, transfer, amount, ccy, tenant)
        if fate in ("core_booked_late", "core_late_unrecorded"):  # booked by the core just after the as-of time
            snap.core(n, transfer, amount, ccy, tenant, at=-timedelta(minutes=5))
        if fate == "core_amount":
            snap.core(n, transfer, amount + 1, ccy, tenant)
        if fate == "core_currency":
            snap.core(n, transfer, amount, "NZD", tenant)
        if fate == "core_transfer_id":
            snap.core(n, f"{transfer}-other", amount, ccy, tenant)
    snap.three_way = three_way
    if broken_totals and snap.rows["outbox"]:
        first = snap.rows["outbox"][0]
        snap.totals(first["correlation_id"], first["currency"], control_cents=-1)
    return snap


# Each example is a Spark job (~5-10 s on a loaded 2-core machine); an example holds up to 25 lifecycles of
# every kind, so 12 examples meet every break category many times over (the suite's time is budgeted; the
# per-status tests in test_statuses.py pin each category on its own).
@pytest.mark.timeout(900)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lifecycles=s.lists(lifecycle, min_size=1, max_size=25, unique_by=lambda life: (life[1], life[2])),
    broken_totals=s.booleans(),
    three_way=s.booleans(),
)
def test_spark_agrees_with_the_oracle(
    spark: SparkSession,
    tmp_path_factory: pytest.TempPathFactory,
    lifecycles: list[Lifecycle],
    broken_totals: bool,
    three_way: bool,
) -> None:
    """Without the core's journal (the embedded ledger) the core's transfers are not read at all; with it,
    each kind of break between remit and the core must be found where the oracle finds it."""
    snap = _build(lifecycles, broken_totals, three_way)
    result = run(spark, snap, Path(tmp_path_factory.mktemp("prop")))

    expected = statuses(snap.rows, AS_OF, GRACE, three_way)
    assert result.three_way == three_way
    lines = result.breaks.to_pylist()
    breaks = {(b["tenant_id"], b["message_id"]): b["status"] for b in lines if b["message_id"] is not None}
    assert breaks == {k: st for k, st in expected.items() if st in BREAKS}
    # Control totals that disagree are a break row of their own, naming the batch and currency (issue 37, item 4).
    agree = totals_agree(snap.rows, snap._batch_totals(), AS_OF, GRACE, three_way)
    totals_lines = {(b["correlation_id"], b["tenant_id"], b["currency"]): b["status"] for b in lines
                    if b["message_id"] is None}  # fmt: skip
    assert totals_lines == {group: "control_totals" for group, ok in agree.items() if not ok}
    assert result.breaks.num_rows == len(breaks) + len(totals_lines)
    for fate_status in ("processed", "dead_lettered", "expired", "in_flight"):
        want = sum(1 for st in expected.values() if st == fate_status)
        assert sum(result.summary[f"{fate_status}_count"].to_pylist()) == want, fate_status

    summary = result.summary.to_pylist()
    states = {(r["correlation_id"], r["tenant_id"], r["currency"]): r["state"] for r in summary}
    expected_states = group_states(snap.rows, snap._batch_totals(), AS_OF, GRACE, three_way)
    assert states == expected_states
    found_batches = {(r["correlation_id"], r["tenant_id"]): r["batch_state"] for r in summary}
    assert found_batches == batch_states(expected_states)
    # Every message generated is classified (two-way: but the ones only the core's journal knows of).
    in_remit = {(t, mid(n)) for fate, t, n, *_ in lifecycles if three_way or fate != "core_foreign"}
    assert {k for k, st in expected.items() if st is not None or k in in_remit} == in_remit
    direct = [(t, mid(n)) for fate, t, n, *_ in lifecycles if fate.startswith("direct_")]
    assert sum(result.summary["amqp_count"].to_pylist()) == len(direct)
    in_both = ("core_booked", "core_booked_late", "direct_core", "core_booked_with_ledger", "core_listed_twice")
    booked_in_both = sum(1 for fate, *_ in lifecycles if fate in in_both)
    assert sum(result.summary["core_booked_count"].to_pylist()) == (booked_in_both if three_way else 0)
    # Money moved more than once, in remit's ledger or in the core: duplicate_count counts both (the core's share
    # in core_duplicate_count too).
    twice = {st: sum(1 for v in expected.values() if v == st) for st in ("duplicate", "core_duplicate")}
    assert sum(result.summary["core_duplicate_count"].to_pylist()) == twice["core_duplicate"]
    assert sum(result.summary["duplicate_count"].to_pylist()) == twice["duplicate"] + twice["core_duplicate"]

"""The driver's fold (reconciliation/fold.py): the Spark rows summed per batch x tenant x currency in Arrow.

Checked against a row-by-row fold written here (the way the job did it before it was vectorized), and for the
one thing Arrow does differently from Python: an int64 sum that does not fit must fail, never wrap.
No Spark session: the raw rows are built directly in the layout of reconciliation/rows.py.
"""

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as s

from reconciliation import statuses as st
from reconciliation.fold import MoneyOverflowError
from reconciliation.result import SUMMARY_SCHEMA, split_result
from reconciliation.rows import BREAK_EVIDENCE, GROUP_KEYS, TOTALS

AS_OF = datetime(2025, 5, 2, tzinfo=UTC)
NAMES = {1: "batch-1", 2: "batch-2", 10: "tenant-a", 11: "tenant-b", 100: "AUD", 101: "USD"}
_TYPES = {"status": pa.string(), "origin": pa.string(), "in_core": pa.bool_(), "is_totals": pa.bool_()}
RAW_SCHEMA = pa.schema(
    [(k, _TYPES.get(k, pa.int64())) for k in GROUP_KEYS]
    + [("messages", pa.int64()), ("cents", pa.int64())]
    + [(c, pa.timestamp("us", tz="UTC") if c == "o_expires" else pa.int64()) for c in BREAK_EVIDENCE]
    + [(c, pa.int64()) for c in TOTALS]
)
RAW_SCHEMA = RAW_SCHEMA.set(RAW_SCHEMA.get_field_index("ref_differs"), pa.field("ref_differs", pa.bool_()))
KEY = s.tuples(s.sampled_from([1, 2, None]), s.sampled_from([10, 11]), s.sampled_from([100, 101, None]))
MESSAGE_ROW = s.fixed_dictionaries(
    {
        "status": s.sampled_from([*st.STATUSES, None]),
        "origin": s.sampled_from([st.ORIGIN_FILE, st.ORIGIN_AMQP, None]),
        "in_core": s.sampled_from([True, False, None]),
        "messages": s.integers(1, 2),
        # Small amounts often, so that a batch's rows add up to its control totals now and then.
        "cents": s.none() | s.integers(0, 3) | s.integers(-(10**12), 10**12),
    }
)
TOTALS_ROW = s.fixed_dictionaries({c: s.none() | s.integers(0, 4) | s.integers(0, 3 * 10**12) for c in TOTALS})
Row = tuple[tuple[int | None, ...], Mapping[str, Any]]


def _raw(message_rows: Sequence[Row], totals: Mapping[Any, Mapping[str, Any]]) -> pa.Table:
    rows = [{**dict(zip(("corr_h", "tenant_h", "ccy_h"), key, strict=True)), "is_totals": False, **r}
            for key, r in message_rows]  # fmt: skip
    rows += [{**dict(zip(("corr_h", "tenant_h", "ccy_h"), key, strict=True)), "is_totals": True, "messages": 0, **t}
             for key, t in totals.items()]  # fmt: skip
    return pa.Table.from_pylist(rows, schema=RAW_SCHEMA)


def _reference(raw: pa.Table) -> dict[tuple[str | None, ...], dict[str, Any]]:
    """Row by row, in Python integers (which cannot overflow)."""
    counters = [c for c in SUMMARY_SCHEMA.names[3:] if c.endswith(("_count", "_cents")) and c not in TOTALS]
    groups: dict[tuple[str | None, ...], dict[str, Any]] = {}
    for row in raw.to_pylist():
        key = tuple(None if row[h] is None else NAMES[row[h]] for h in ("corr_h", "tenant_h", "ccy_h"))
        g = groups.setdefault(key, {**dict.fromkeys(counters, 0), **dict.fromkeys(TOTALS), "totals": 0})
        if row["is_totals"]:
            g.update({c: row[c] for c in TOTALS}, totals=1)
            continue
        status, n, cents = row["status"], row["messages"], row["cents"] or 0
        if status is None:
            g["unmatched_count"] += n
            continue
        kinds = [status, *["accepted"] * (row["origin"] is not None), *["amqp"] * (row["origin"] == st.ORIGIN_AMQP)]
        kinds += ["core_booked"] * bool(row["in_core"] and status == st.PROCESSED)
        kinds += [st.DUPLICATE] * (status == st.CORE_DUPLICATE)  # money moved more than once, in the core
        for kind in kinds:
            g[f"{kind}_count"] += n
            g[f"{kind}_cents"] += cents
    for g in groups.values():
        # duplicate_count holds core_duplicate's too: each broken message once.
        g["break_count"] = sum(g[f"{b}_count"] for b in st.BREAK_STATUSES) - g["core_duplicate_count"]
        files = (g["accepted_count"] - g["amqp_count"], g["accepted_cents"] - g["amqp_cents"])
        declared = (g["totals_accepted_count"], g["totals_accepted_cents"])
        controls_agree = g["control_count"] in (None, declared[0]) and g["control_cents"] in (None, declared[1])
        g["totals_ok"] = files[0] == 0 if not g.pop("totals") else declared == files and controls_agree
        g["break_count"] += not g["totals_ok"]  # the totals' own break
        broken = g["break_count"] > 0
        g["state"] = st.BREAKS if broken else st.PENDING if g["in_flight_count"] else st.RECONCILED
    for key, g in groups.items():
        g["batch_state"] = st.worst_state([h["state"] for k, h in groups.items() if k[:2] == key[:2]])
    return groups


def _folded(raw: pa.Table) -> dict[tuple[str | None, ...], dict[str, Any]]:
    rows = split_result(raw, NAMES, AS_OF, {}).summary.to_pylist()
    return {(r.pop("correlation_id"), r.pop("tenant_id"), r.pop("currency")): r for r in rows}


@settings(max_examples=300, deadline=None)
@given(
    message_rows=s.lists(s.tuples(KEY, MESSAGE_ROW), max_size=40),
    totals=s.dictionaries(KEY, TOTALS_ROW, max_size=6),
)
def test_the_arrow_fold_agrees_with_a_row_by_row_fold(
    message_rows: list[Row], totals: dict[Any, dict[str, Any]]
) -> None:
    raw = _raw(message_rows, totals)
    assert _folded(raw) == _reference(raw)


def test_the_summary_is_sorted_by_batch_then_tenant_then_currency() -> None:
    rows: list[Row] = [((k, t, c), {"status": st.PROCESSED, "origin": st.ORIGIN_AMQP, "messages": 1, "cents": 5})
             for k in (2, 1) for t in (11, 10) for c in (101, 100)]  # fmt: skip
    summary = split_result(_raw(rows, {}), NAMES, AS_OF, {}).summary
    keys = list(zip(*(summary[c].to_pylist() for c in ("correlation_id", "tenant_id", "currency")), strict=True))
    assert keys == sorted(keys)
    assert len(keys) == 8


def _processed(cents: int, status: str = st.PROCESSED) -> Row:
    return (1, 10, 100), {"status": status, "origin": st.ORIGIN_AMQP, "messages": 1, "cents": cents}


def test_a_total_at_the_int64_limit_is_exact() -> None:
    top = 2**63 - 1
    raw = _raw(
        [_processed(top - 5), _processed(5), _processed(2**62, st.IN_FLIGHT), _processed(-(2**62), st.IN_FLIGHT)], {}
    )
    (row,) = _folded(raw).values()
    assert (row["processed_cents"], row["in_flight_cents"]) == (top, 0)
    assert row["accepted_cents"] == top


@pytest.mark.parametrize(
    ("rows", "counter"),
    [
        ([_processed(2**62), _processed(2**62)], "processed_cents"),  # int64 sums would say -2^63
        ([_processed(-(2**62)), _processed(-(2**62)), _processed(-1)], "processed_cents"),
        # Each status fits; what was accepted across them does not.
        ([_processed(2**62), _processed(2**62, st.DEAD_LETTERED)], "accepted_cents"),
    ],
)
def test_a_total_beyond_int64_fails_the_run_instead_of_wrapping(rows: list[Row], counter: str) -> None:
    with pytest.raises(MoneyOverflowError, match=counter):
        split_result(_raw(rows, {}), NAMES, AS_OF, {})


@pytest.mark.parametrize(
    ("control", "ok"),
    [
        ({"control_count": None, "control_cents": None}, True),  # the file declared no control totals
        ({"control_count": 2, "control_cents": 30}, True),
        ({"control_count": 3, "control_cents": 30}, False),
        ({"control_count": 2, "control_cents": 31}, False),
    ],
)
def test_a_batch_reconciles_when_its_file_totals_agree_with_what_was_accepted(
    control: dict[str, int | None], ok: bool
) -> None:
    paid = [
        ((1, 10, 100), {"status": st.PROCESSED, "origin": st.ORIGIN_FILE, "messages": 1, "cents": c}) for c in (10, 20)
    ]
    totals = {(1, 10, 100): {"totals_accepted_count": 2, "totals_accepted_cents": 30, **control}}
    result = split_result(_raw(paid, totals), NAMES, AS_OF, {})
    [row] = result.summary.to_pylist()
    assert (row["totals_ok"], row["state"], row["break_count"]) == (ok, st.RECONCILED if ok else st.BREAKS, int(not ok))
    # A break of its own, as a message's is: a row naming the batch, the currency and what disagrees.
    assert result.breaks.num_rows == int(not ok)


def test_control_totals_that_disagree_are_a_break_row_naming_the_batch_currency_and_what_disagrees() -> None:
    # Issue 37, item 4: a CSV whose control record said 5 payments / 9,999 cents over 2 rows / 3,000 cents gave
    # BREAKS with breaks.csv empty and "0 breaks" everywhere.
    paid = [
        ((1, 10, 100), {"status": st.PROCESSED, "origin": st.ORIGIN_FILE, "messages": 1, "cents": c})
        for c in (1_000, 2_000)
    ]
    direct = ((1, 10, 100), {"status": st.PROCESSED, "origin": st.ORIGIN_AMQP, "messages": 1, "cents": 7})
    lying = {"totals_accepted_count": 2, "totals_accepted_cents": 3_000, "control_count": 5, "control_cents": 9_999}
    unrecorded = ((2, 11, 101), {"status": st.IN_FLIGHT, "origin": st.ORIGIN_FILE, "messages": 1, "cents": 40})
    result = split_result(_raw([*paid, direct, unrecorded], {(1, 10, 100): lying}), NAMES, AS_OF, {})

    assert result.breaks.to_pylist() == [
        {"message_id": None, "correlation_id": "batch-1", "tenant_id": "tenant-a", "currency": "AUD",
         "status": st.CONTROL_TOTALS, "amount_cents": 3_000,
         "detail": "control totals disagree: the file's control record says 5 payment(s) / 9,999 cents; batch "
                   "totals 2 payment(s) / 3,000 cents; the outbox holds 2 payment(s) / 3,000 cents from the file"},
        {"message_id": None, "correlation_id": "batch-2", "tenant_id": "tenant-b", "currency": "USD",
         "status": st.CONTROL_TOTALS, "amount_cents": 40,
         "detail": "control totals missing: no batch totals recorded for the 1 payment(s) / 40 cents accepted from "
                   "its file"},
    ]  # fmt: skip
    assert [r["break_count"] for r in result.summary.to_pylist()] == [1, 1]
    assert result.result == st.BREAKS


@pytest.mark.parametrize(
    ("control", "said"),
    [
        # Only the accepted totals disagree with the outbox: the file stated none of its own.
        ({"totals_accepted_count": 3, "totals_accepted_cents": 30, "control_count": None, "control_cents": None}, ""),
        # A file may state a count without a sum (pain.001's CtrlSum is optional), or the other way round.
        ({"totals_accepted_count": 2, "totals_accepted_cents": 30, "control_count": 3, "control_cents": None},
         "the file's control record says 3 payment(s) / ? cents; "),
        ({"totals_accepted_count": 2, "totals_accepted_cents": 30, "control_count": None, "control_cents": 31},
         "the file's control record says ? payment(s) / 31 cents; "),
    ],
)  # fmt: skip
def test_a_totals_break_says_which_totals_were_stated(control: dict[str, int | None], said: str) -> None:
    paid = [
        ((1, 10, 100), {"status": st.PROCESSED, "origin": st.ORIGIN_FILE, "messages": 1, "cents": c}) for c in (10, 20)
    ]
    [line] = split_result(_raw(paid, {(1, 10, 100): control}), NAMES, AS_OF, {}).breaks.to_pylist()
    accepted = f"{control['totals_accepted_count']} payment(s) / {control['totals_accepted_cents']} cents"
    outbox = "the outbox holds 2 payment(s) / 30 cents from the file"
    assert line["detail"] == f"control totals disagree: {said}batch totals {accepted}; {outbox}"


def test_a_run_with_nothing_to_reconcile_is_reconciled_and_exits_0() -> None:
    result = split_result(_raw([], {}), NAMES, AS_OF, {})
    assert (result.result, result.message_count, result.breaks.num_rows) == (st.RECONCILED, 0, 0)
    assert [st.exit_code(s) for s in (st.RECONCILED, st.PENDING, st.BREAKS)] == [0, 0, 2]


def test_a_batch_is_as_bad_as_its_worst_currency_whatever_their_order() -> None:
    broken = ((1, 10, 101), {"status": st.MISSING, "origin": st.ORIGIN_AMQP, "messages": 1, "cents": 5, "break_hi": 1,
                              "break_lo": 1})  # fmt: skip
    waiting = ((1, 10, 102), {"status": st.IN_FLIGHT, "origin": st.ORIGIN_AMQP, "messages": 1, "cents": 5})
    fine = ((1, 10, 100), {"status": st.PROCESSED, "origin": st.ORIGIN_AMQP, "messages": 1, "cents": 5})
    other = ((2, 10, 100), {"status": st.PROCESSED, "origin": st.ORIGIN_AMQP, "messages": 1, "cents": 5})
    names = {**NAMES, 102: "NZD"}
    for rows in ([broken, waiting, fine, other], [fine, other, waiting, broken]):
        summary = split_result(_raw(rows, {}), names, AS_OF, {}).summary.to_pylist()
        states = {(r["correlation_id"], r["currency"]): (r["state"], r["batch_state"]) for r in summary}
        assert states == {
            ("batch-1", "AUD"): (st.RECONCILED, st.BREAKS),
            ("batch-1", "NZD"): (st.PENDING, st.BREAKS),
            ("batch-1", "USD"): (st.BREAKS, st.BREAKS),
            ("batch-2", "AUD"): (st.RECONCILED, st.RECONCILED),
        }


_AND_IN_THE_CORE = "1 ledger row(s) and a transfer in the core for one message"


def _broken(status: str, **evidence: Any) -> Row:
    """A broken message's row: message_id 00000000-0000-4000-8000-000000000007, 900 cents."""
    key = {"break_hi": 0x0000000000004000, "break_lo": -0x7FFFFFFFFFFFFFF9}
    return (1, 10, 100), {"status": status, "origin": st.ORIGIN_FILE, "messages": 1, "cents": 900, **key, **evidence}


@pytest.mark.parametrize(
    ("row", "detail"),
    [
        (_broken(st.CORE_DUPLICATE, n_core_transfers=2, c_amount=900, c_ccy_h=100, o_amount=900, o_ccy_h=100),
         "2 transfers in the core's journal under one key (the largest 900 AUD); accepted 900 AUD"),
        (_broken(st.UNEXPECTED, n_ledger=1), "1 ledger row(s), no outbox row"),
        (_broken(st.MISMATCH, n_ledger=1, o_amount=900, o_ccy_h=100, l_amount=901, l_ccy_h=101),
         "outbox 900 AUD; 1 ledger row(s), first 901 USD"),
        (_broken(st.DUPLICATE, n_ledger=2), "2 ledger rows for one message"),
        (_broken(st.DUPLICATE, n_ledger=1, c_amount=900), _AND_IN_THE_CORE),
        # The core's transfer known by its id alone: still a second booking.
        (_broken(st.DUPLICATE, n_ledger=1, ref_differs=True), _AND_IN_THE_CORE),
        (_broken(st.CORE_ONLY, c_amount=900, c_ccy_h=101), "core transfer 900 USD; remit has no record of it (an "
         "unknown outcome never resolved, or a key remit never accepted)"),
        (_broken(st.REMIT_ONLY, o_amount=900, o_ccy_h=100), "remit recorded a core transfer for 900 AUD; the core's "
         "journal has none"),
        (_broken(st.CORE_MISMATCH, o_amount=900, o_ccy_h=100, c_amount=901, c_ccy_h=100, ref_differs=False),
         "remit 900 AUD; core 901 AUD"),
        (_broken(st.CORE_MISMATCH, o_amount=900, o_ccy_h=100, c_amount=900, c_ccy_h=100, ref_differs=True),
         "remit 900 AUD; core 900 AUD; transfer ids differ"),
        (_broken(st.MISSING, n_processed=1), "idempotency record without ledger row or dead letter"),
        (_broken(st.MISSING, n_processed=0, o_expires=datetime(2025, 5, 1, 7, 8, 9, 999_999, tzinfo=UTC)),
         "no terminal state; expired 2025-05-01T07:08:09Z"),
        # Evidence that is absent (a currency no table names) shows as None rather than vanishing.
        (_broken(st.MISMATCH, n_ledger=1, o_amount=900, o_ccy_h=100, l_amount=None, l_ccy_h=999),
         "outbox 900 AUD; 1 ledger row(s), first None None"),
    ],
)  # fmt: skip
def test_each_break_gets_a_detail_line_an_operator_can_act_on(row: Row, detail: str) -> None:
    agreeing = {(1, 10, 100): {"totals_accepted_count": 1, "totals_accepted_cents": 900}}  # the file's totals agree
    (line,) = split_result(_raw([row], agreeing), NAMES, AS_OF, {}).breaks.to_pylist()

    assert line == {"message_id": "00000000-0000-4000-8000-000000000007", "correlation_id": "batch-1",
                    "tenant_id": "tenant-a", "currency": "AUD", "status": row[1]["status"], "amount_cents": 900,
                    "detail": detail}  # fmt: skip

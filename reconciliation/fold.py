"""The driver's fold of the Spark rows (summary.py) into one row per batch x tenant x currency, in Arrow.

A Python loop over the rows took about 3.5 s of a 10M-message run (docs/benchmarks.md, "Reconciliation"), break
lines included; the summary folded here takes about 0.2 s, names decoded and sorted.

Money is summed in decimal128(38, 0), exact for any number of int64 inputs, and cast back to int64 with a
checked cast: a total that does not fit fails the run, as Spark's ANSI sums do. Arrow's own int64 sums
would wrap without a word (two rows of 2^62 cents sum to -2^63).
"""

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from reconciliation import statuses as st
from reconciliation.rows import NAME_KEYS, TOTALS

_MONEY = pa.decimal128(38, 0)
# The counters a group's rows add to, each as (name, mask over the raw rows); each has a count and cents.
Masks = list[tuple[str, pa.ChunkedArray]]


class MoneyOverflowError(ArithmeticError):
    """A group's total does not fit int64 cents: the run fails rather than report a wrapped amount."""


Decoder = Callable[[pa.ChunkedArray], pa.ChunkedArray]
# A batch is its correlation_id within its tenant: rows of another tenant that name the same batch id (a
# direct publisher chooses it freely) are that tenant's and never change this batch's state.
BatchKey = tuple[str | None, str | None]


def flag(values: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray:
    """A condition where null means no (as Python's truthiness of None in the rows)."""
    return pc.fill_null(values, False)


def _masks(raw: pa.Table) -> tuple[Masks, pa.ChunkedArray]:
    """Which counters each raw row adds to, and the rows of no status (never accepted, not reconciled)."""
    message_row = pc.invert(flag(raw["is_totals"]))
    status, origin = raw["status"], raw["origin"]
    has_status = pc.and_(message_row, pc.is_valid(status))
    masks: Masks = [(s, pc.and_(has_status, flag(_is_in(status, st.counted_as(s))))) for s in st.STATUSES]
    masks += [
        # Every broken message once (duplicate_count also counts core_duplicate's: the sum of columns would not).
        ("break", pc.and_(has_status, flag(_is_in(status, st.BREAK_STATUSES)))),
        ("accepted", pc.and_(has_status, pc.is_valid(origin))),
        ("amqp", pc.and_(has_status, flag(pc.equal(origin, st.ORIGIN_AMQP)))),
        ("core_booked", pc.and_(has_status, flag(pc.and_(raw["in_core"], pc.equal(status, st.PROCESSED))))),
    ]
    return masks, pc.and_(message_row, pc.is_null(status))


def _is_in(values: pa.ChunkedArray, statuses: tuple[str, ...]) -> pa.ChunkedArray:
    return pc.is_in(values, value_set=pa.array(statuses, pa.string()))


def _counter_columns(raw: pa.Table) -> dict[str, pa.ChunkedArray]:
    """Per raw row, what it adds to each counter of its group (0 where it adds nothing)."""
    masks, unmatched = _masks(raw)
    messages, cents = raw["messages"], pc.cast(pc.fill_null(raw["cents"], 0), _MONEY)
    columns = {"unmatched_count": pc.if_else(unmatched, messages, 0)}
    for name, mask in masks:
        columns[f"{name}_count"] = pc.if_else(mask, messages, 0)
        columns[f"{name}_cents"] = pc.if_else(mask, cents, pa.scalar(0, _MONEY))
    return columns


def _totals_columns(raw: pa.Table) -> dict[str, pa.ChunkedArray]:
    """The batch's control totals, from its totals row (Spark's group-by leaves at most one per group)."""
    is_totals = flag(raw["is_totals"])
    columns = {"totals_rows": pc.if_else(is_totals, 1, 0)}
    for name in TOTALS:
        columns[name] = pc.if_else(is_totals, raw[name], pa.scalar(None, pa.int64()))
    return columns


def _grouped(raw: pa.Table) -> pa.Table:
    counters, totals = _counter_columns(raw), _totals_columns(raw)
    table = pa.table({**{k: raw[k] for k in NAME_KEYS}, **counters, **totals})
    aggregates = [(c, "sum") for c in (*counters, "totals_rows")]
    aggregates += [(c, "max") for c in TOTALS]
    grouped = table.group_by(list(NAME_KEYS), use_threads=False).aggregate(aggregates)
    renamed = [name.removesuffix("_sum").removesuffix("_max") for name in grouped.column_names]
    grouped = grouped.rename_columns(renamed)
    for name in (c for c in counters if c.endswith("_cents")):
        grouped = grouped.set_column(grouped.schema.get_field_index(name), name, _cents(grouped[name], name))
    return grouped


def _cents(total: pa.ChunkedArray, name: str) -> pa.ChunkedArray:
    try:
        return pc.cast(total, pa.int64())  # a checked cast: out of range raises instead of wrapping
    except pa.ArrowInvalid as exc:
        raise MoneyOverflowError(f"a batch's {name} does not fit int64 cents ({exc})") from exc


def _totals_ok(g: pa.Table) -> pa.ChunkedArray:
    """The file's control totals, the accepted totals and the messages accepted from files must all agree
    (direct publishes came in no file: no totals speak for them)."""
    from_files_count = pc.subtract_checked(g["accepted_count"], g["amqp_count"])
    from_files_cents = pc.subtract_checked(g["accepted_cents"], g["amqp_cents"])
    t_count, t_cents = g["totals_accepted_count"], g["totals_accepted_cents"]

    def control_fits(control: str, total: pa.ChunkedArray) -> pa.ChunkedArray:
        return pc.or_(pc.is_null(g[control]), flag(pc.equal(g[control], total)))

    with_totals = pc.and_(
        pc.and_(flag(pc.equal(t_count, from_files_count)), flag(pc.equal(t_cents, from_files_cents))),
        pc.and_(control_fits("control_count", t_count), control_fits("control_cents", t_cents)),
    )
    # Without a totals row a group is fine only where no file's message was accepted.
    return pc.if_else(pc.equal(g["totals_rows"], 0), pc.equal(from_files_count, 0), with_totals)


def _with_states(g: pa.Table) -> pa.Table:
    totals_ok = _totals_ok(g)
    # Control totals that disagree are a break of their own (a row of breaks.csv): break_count is the group's rows.
    break_count = pc.add_checked(g["break_count"], pc.if_else(totals_ok, 0, 1).cast(pa.int64()))
    g = g.set_column(g.schema.get_field_index("break_count"), "break_count", break_count)
    waiting = pc.if_else(pc.greater(g["in_flight_count"], 0), st.PENDING, st.RECONCILED)
    state = pc.if_else(pc.greater(break_count, 0), st.BREAKS, waiting)
    derived = {"totals_ok": totals_ok, "state": state}
    for name, column in derived.items():
        g = g.append_column(name, column)
    return g


def _batch_states(corr: pa.ChunkedArray, tenant: pa.ChunkedArray, state: pa.ChunkedArray) -> pa.Array:
    """A batch (its correlation_id within its tenant) is as bad as its worst currency: a few rows per batch,
    so a dict is simpler than a join that cannot match null keys."""
    batches = list(zip(corr.to_pylist(), tenant.to_pylist(), strict=True))
    worst: dict[BatchKey, str] = {}
    for batch, s in zip(batches, state.to_pylist(), strict=True):
        worst[batch] = st.worst_state([worst.get(batch, st.RECONCILED), s])
    return pa.array([worst[b] for b in batches], pa.string())


def fold_summary(raw: pa.Table, decode: Decoder, schema: pa.Schema) -> pa.Table:
    """One row per batch x tenant x currency (`schema`), names decoded, states derived, sorted."""
    g = _with_states(_grouped(raw))
    names = {"correlation_id": decode(g["corr_h"]), "tenant_id": decode(g["tenant_h"]), "currency": decode(g["ccy_h"])}
    batch_state = _batch_states(names["correlation_id"], names["tenant_id"], g["state"])
    columns = {**names, **{c: g[c] for c in g.column_names if c not in NAME_KEYS}, "batch_state": batch_state}
    summary = pa.table({field.name: columns[field.name] for field in schema}).cast(schema)
    return summary.sort_by([("correlation_id", "ascending"), ("tenant_id", "ascending"), ("currency", "ascending")])

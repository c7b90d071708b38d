"""The run's result on the driver: the Spark rows pivoted to one row per batch x currency, names decoded,
control totals checked, states derived, and break detail lines written."""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from reconciliation import statuses as st
from reconciliation.snapshot import uuid_text

BREAK_SCHEMA = pa.schema(
    [
        ("message_id", pa.string()),
        ("correlation_id", pa.string()),
        ("tenant_id", pa.string()),
        ("currency", pa.string()),
        ("status", pa.string()),
        ("amount_cents", pa.int64()),
        ("detail", pa.string()),
    ]
)
_COUNTERS = (
    "accepted_count",
    "accepted_cents",
    *[f"{s}_{kind}" for s in st.STATUSES for kind in ("count", "cents")],
    "unmatched_count",
    # Of the accepted: those published directly over AMQP (no batch file, so no control totals).
    "amqp_count",
    "amqp_cents",
    # Of the processed: those whose transfer the core's journal holds too (three-way runs).
    "core_booked_count",
    "core_booked_cents",
)
_OPTIONAL = ("totals_accepted_count", "totals_accepted_cents", "control_count", "control_cents")
SUMMARY_SCHEMA = pa.schema(
    [("correlation_id", pa.string()), ("tenant_id", pa.string()), ("currency", pa.string())]
    + [(c, pa.int64()) for c in (*_COUNTERS, *_OPTIONAL, "break_count")]
    + [("totals_ok", pa.bool_()), ("state", pa.string()), ("batch_state", pa.string())]
)
_NAME_COLUMNS = (("corr_h", "correlation_id"), ("tenant_h", "tenant_id"), ("ccy_h", "currency"))

Group = dict[str, Any]
Key = tuple[int | None, int | None, int | None]
# A batch is its correlation_id within its tenant: rows of another tenant that name the same batch id (a
# direct publisher chooses it freely) are that tenant's and never change this batch's state.
BatchKey = tuple[str | None, str | None]


def _batch_keys(rows: list[dict[str, Any]]) -> list[BatchKey]:
    return [(r["correlation_id"], r["tenant_id"]) for r in rows]


@dataclass(frozen=True)
class ReconcileResult:
    as_of: datetime
    summary: pa.Table  # SUMMARY_SCHEMA: one row per correlation_id x tenant_id x currency
    breaks: pa.Table  # BREAK_SCHEMA: one row per broken message
    input_counts: dict[str, int] = field(default_factory=dict)
    three_way: bool = False  # the core's journal was compared too

    @property
    def result(self) -> str:
        return st.worst_state(self.summary.column("batch_state").to_pylist())

    @property
    def message_count(self) -> int:
        return sum(pc.sum(self.summary.column(f"{s}_count")).as_py() or 0 for s in st.STATUSES)

    def batches_in(self, state: str) -> int:
        rows = self.summary.to_pylist()
        batch_states = {batch: r["batch_state"] for r, batch in zip(rows, _batch_keys(rows), strict=True)}
        return sum(1 for s in batch_states.values() if s == state)


def wanted_hashes(raw: pa.Table) -> set[int]:
    """Every name hash the raw Spark rows refer to (group keys and break evidence)."""
    hashes: set[int] = set()
    for col in ("corr_h", "tenant_h", "ccy_h", "l_ccy_h", "o_ccy_h", "c_ccy_h"):
        hashes.update(h for h in raw[col].to_pylist() if h is not None)
    return hashes


def _detail(b: dict[str, Any], names: dict[int, str]) -> str:
    """A one-line explanation an operator can act on."""
    status = b["status"]
    if status == st.UNEXPECTED:
        return f"{b['n_ledger']} ledger row(s), no outbox row"
    if status == st.MISMATCH:
        return (
            f"outbox {b['o_amount']} {names.get(b['o_ccy_h'])}; {b['n_ledger']} ledger row(s), "
            f"first {b['l_amount']} {names.get(b['l_ccy_h'])}"
        )
    if status == st.DUPLICATE:
        if b["c_amount"] is not None or b["ref_differs"] is not None:
            return f"{b['n_ledger']} ledger row(s) and a transfer in the core for one message"
        return f"{b['n_ledger']} ledger rows for one message"
    if status == st.CORE_ONLY:
        return (
            f"core transfer {b['c_amount']} {names.get(b['c_ccy_h'])}; remit has no record of it "
            "(an unknown outcome never resolved, or a key remit never accepted)"
        )
    if status == st.REMIT_ONLY:
        amount = f"{b['o_amount']} {names.get(b['o_ccy_h'])}"
        return f"remit recorded a core transfer for {amount}; the core's journal has none"
    if status == st.CORE_MISMATCH:
        ids = "; transfer ids differ" if b["ref_differs"] else ""
        return f"remit {b['o_amount']} {names.get(b['o_ccy_h'])}; core {b['c_amount']} {names.get(b['c_ccy_h'])}{ids}"
    if b["n_processed"]:
        return "idempotency record without ledger row or dead letter"
    return f"no terminal state; expired {b['o_expires']:%Y-%m-%dT%H:%M:%SZ}"


def _add(group: Group, row: dict[str, Any]) -> None:
    """Fold one Spark row (a status of a group, a broken message, or a totals row) into its group."""
    if row["is_totals"]:
        group["totals_rows"] += 1
        group.update({c: row[c] for c in _OPTIONAL})
        return
    status, n, cents = row["status"], row["messages"], row["cents"] or 0
    if status is None:
        group["unmatched_count"] += n
        return
    group[f"{status}_count"] += n
    group[f"{status}_cents"] += cents
    if row["origin"] is not None:
        group["accepted_count"] += n
        group["accepted_cents"] += cents
    if row["origin"] == st.ORIGIN_AMQP:
        group["amqp_count"] += n
        group["amqp_cents"] += cents
    if row["in_core"] and status == st.PROCESSED:
        group["core_booked_count"] += n
        group["core_booked_cents"] += cents


def _totals_ok(g: Group) -> bool:
    """The file's control totals, the accepted totals and the messages accepted from files must all agree
    (direct publishes came in no file: no totals speak for them)."""
    from_files = (g["accepted_count"] - g["amqp_count"], g["accepted_cents"] - g["amqp_cents"])
    if g["totals_rows"] == 0:
        return bool(from_files[0] == 0)  # fine only where no file's message was accepted
    t_count, t_cents = g["totals_accepted_count"], g["totals_accepted_cents"]
    return bool(
        (t_count, t_cents) == from_files
        and g["control_count"] in (None, t_count)
        and g["control_cents"] in (None, t_cents)
    )


def _finish(g: Group) -> None:
    g["break_count"] = sum(g[f"{s}_count"] for s in st.BREAK_STATUSES)
    g["totals_ok"] = _totals_ok(g)
    broken = g["break_count"] > 0 or not g["totals_ok"]
    g["state"] = st.BREAKS if broken else st.PENDING if g["in_flight_count"] else st.RECONCILED


def _name(names: dict[int, str], h: int | None) -> str | None:
    return None if h is None else names.get(h)


def split_result(
    raw: pa.Table, names: dict[int, str], as_of: datetime, input_counts: dict[str, int], three_way: bool = False
) -> ReconcileResult:
    groups: dict[Key, Group] = defaultdict(lambda: dict.fromkeys((*_COUNTERS, "totals_rows"), 0))
    breaks = []
    for row in raw.to_pylist():
        key: Key = (row["corr_h"], row["tenant_h"], row["ccy_h"])
        _add(groups[key], row)
        if row["break_hi"] is not None:
            keys = {name: _name(names, h) for h, (_, name) in zip(key, _NAME_COLUMNS, strict=True)}
            message_id = uuid_text(row["break_hi"], row["break_lo"])
            breaks.append({"message_id": message_id, **keys, "status": row["status"],
                           "amount_cents": row["cents"], "detail": _detail(row, names)})  # fmt: skip
    rows: list[dict[str, Any]] = []
    for key, g in groups.items():
        _finish(g)
        rows.append({name: _name(names, h) for h, (_, name) in zip(key, _NAME_COLUMNS, strict=True)} | g)
    worst: dict[BatchKey, str] = {}
    for r, batch in zip(rows, _batch_keys(rows), strict=True):  # a batch is as bad as its worst currency
        worst[batch] = st.worst_state([worst.get(batch, st.RECONCILED), r["state"]])
    for r, batch in zip(rows, _batch_keys(rows), strict=True):
        r["batch_state"] = worst[batch]
    order = [("correlation_id", "ascending"), ("currency", "ascending")]
    summary = pa.Table.from_pylist(rows, schema=SUMMARY_SCHEMA).sort_by(order)
    by_message = [("tenant_id", "ascending"), ("message_id", "ascending")]
    detail = pa.Table.from_pylist(breaks, schema=BREAK_SCHEMA).sort_by([*order[:1], *by_message])
    return ReconcileResult(as_of, summary, detail, input_counts, three_way)

"""The run's result on the driver: the Spark rows pivoted to one row per batch x currency, names decoded,
control totals checked, states derived, and break detail lines written."""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from reconciliation import statuses as st
from reconciliation.fold import Decoder, fold_summary
from reconciliation.rows import BREAK_EVIDENCE, BREAK_KEY
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
_BREAK_ROW_COLUMNS = [*(h for h, _ in _NAME_COLUMNS), "status", *BREAK_KEY, "cents", *BREAK_EVIDENCE]

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
        hashes.update(pc.unique(raw[col].drop_null()).to_pylist())
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
    return f"no terminal state; expired {b['o_expires']}"


def _name(names: dict[int, str], h: int | None) -> str | None:
    return None if h is None else names.get(h)


def _decoder(names: dict[int, str]) -> Decoder:
    """Hash columns to their names (null where the hash is null or unknown)."""
    hashes, texts = pa.array(list(names), pa.int64()), pa.array(list(names.values()), pa.string())
    return lambda column: pc.take(texts, pc.index_in(column, value_set=hashes))


def _break_rows(raw: pa.Table) -> list[dict[str, Any]]:
    """The broken messages' rows as dicts, column by column (Table.to_pylist is several times slower), with
    the expiry already as text (converting timestamps to datetimes is the slowest column)."""
    broken = raw.filter(pc.is_valid(raw["break_hi"])).select(_BREAK_ROW_COLUMNS)
    columns = {name: broken[name] for name in _BREAK_ROW_COLUMNS}
    seconds = pc.cast(pc.floor_temporal(columns["o_expires"], unit="second"), pa.timestamp("s", tz="UTC"))
    columns["o_expires"] = pc.strftime(seconds, "%Y-%m-%dT%H:%M:%SZ")
    values = [column.to_pylist() for column in columns.values()]
    return [dict(zip(columns, row, strict=True)) for row in zip(*values, strict=True)]


def _break_lines(raw: pa.Table, names: dict[int, str]) -> pa.Table:
    """One line per broken message (Spark gave each its own row), sorted by batch, tenant and message_id."""
    lines = []
    for row in _break_rows(raw):
        keys = {name: _name(names, row[h]) for h, name in _NAME_COLUMNS}
        message_id = uuid_text(row["break_hi"], row["break_lo"])
        lines.append({"message_id": message_id, **keys, "status": row["status"],
                      "amount_cents": row["cents"], "detail": _detail(row, names)})  # fmt: skip
    order = [("correlation_id", "ascending"), ("tenant_id", "ascending"), ("message_id", "ascending")]
    return pa.Table.from_pylist(lines, schema=BREAK_SCHEMA).sort_by(order)


def split_result(
    raw: pa.Table, names: dict[int, str], as_of: datetime, input_counts: dict[str, int], three_way: bool = False
) -> ReconcileResult:
    """The raw Spark rows (summary.py) as the run's summary and break lines."""
    summary = fold_summary(raw, _decoder(names), SUMMARY_SCHEMA)
    return ReconcileResult(as_of, summary, _break_lines(raw, names), input_counts, three_way)

"""The run's result on the driver: its summary (one row per batch x tenant x currency, totals checked, states
derived: fold.py) and its break detail lines (break_lines.py), both made from the Spark rows with names decoded."""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from reconciliation import statuses as st
from reconciliation.break_lines import break_lines
from reconciliation.fold import BatchKey, Decoder, fold_summary
from reconciliation.totals_breaks import totals_break_lines

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


def _batch_keys(rows: list[dict[str, Any]]) -> list[BatchKey]:
    return [(r["correlation_id"], r["tenant_id"]) for r in rows]


@dataclass(frozen=True)
class ReconcileResult:
    as_of: datetime
    summary: pa.Table  # SUMMARY_SCHEMA: one row per correlation_id x tenant_id x currency
    breaks: pa.Table  # BREAK_SCHEMA: one row per broken message, and per batch x currency whose totals disagree
    input_counts: dict[str, int] = field(default_factory=dict)
    three_way: bool = False  # the core's journal was compared too

    @property
    def result(self) -> str:
        return st.worst_state(self.summary.column("batch_state").to_pylist())

    @property
    def message_count(self) -> int:
        counts = {s: pc.sum(self.summary.column(f"{s}_count")).as_py() or 0 for s in st.STATUSES}
        # duplicate_count counts core_duplicate's messages too (statuses.counted_as): each message once here.
        return sum(counts.values()) - counts[st.CORE_DUPLICATE]

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


def _decoder(names: dict[int, str]) -> Decoder:
    """Hash columns to their names (null where the hash is null or unknown)."""
    hashes, texts = pa.array(list(names), pa.int64()), pa.array(list(names.values()), pa.string())
    return lambda column: pc.take(texts, pc.index_in(column, value_set=hashes))


def split_result(
    raw: pa.Table, names: dict[int, str], as_of: datetime, input_counts: dict[str, int], three_way: bool = False
) -> ReconcileResult:
    """The raw Spark rows (summary.py) as the run's summary and break lines."""
    decode = _decoder(names)
    summary = fold_summary(raw, decode, SUMMARY_SCHEMA)
    breaks = pa.concat_tables([break_lines(raw, decode, BREAK_SCHEMA), totals_break_lines(summary, BREAK_SCHEMA)])
    order = [("correlation_id", "ascending"), ("tenant_id", "ascending"), ("message_id", "ascending")]
    return ReconcileResult(as_of, summary, breaks.sort_by(order), input_counts, three_way)

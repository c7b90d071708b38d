"""A break row per batch x tenant x currency whose control totals disagree, for breaks.csv and the run's record.

A message's break names its message; this one names its batch and currency and says which totals disagree: the
file's own control record (when it had one), what remit accepted from the file (batch_totals) and what the outbox
holds. Before issue 37 such a batch was BREAKS with no break to show: `breaks.csv` empty, "0 breaks" in the CLI
and the console, and only `totals_ok=false` in `summary.csv` said which batch. Folded rows are a few per batch, so
this reads them as Python rows.
"""

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from reconciliation import statuses as st


def _pair(count: int | None, cents: int | None) -> str:
    return f"{'?' if count is None else f'{count:,}'} payment(s) / {'?' if cents is None else f'{cents:,}'} cents"


def totals_detail(row: dict[str, Any]) -> str:
    """What disagrees, in one line an operator can check against the file."""
    files = _pair(row["accepted_count"] - row["amqp_count"], row["accepted_cents"] - row["amqp_cents"])
    if row["totals_accepted_count"] is None:
        return f"control totals missing: no batch totals recorded for the {files} accepted from its file"
    said = (
        f"the file's control record says {_pair(row['control_count'], row['control_cents'])}; "
        if row["control_count"] is not None or row["control_cents"] is not None
        else ""
    )
    accepted = _pair(row["totals_accepted_count"], row["totals_accepted_cents"])
    return f"control totals disagree: {said}batch totals {accepted}; the outbox holds {files} from the file"


def totals_break_lines(summary: pa.Table, schema: pa.Schema) -> pa.Table:
    """One row (`schema`: BREAK_SCHEMA) per summary row with totals_ok false; its amount is the cents the outbox holds
    for the batch x currency from its file (direct publishes came in no file)."""
    broken = summary.filter(pc.invert(summary["totals_ok"])).to_pylist()
    rows = [
        {
            "message_id": None,
            "correlation_id": r["correlation_id"],
            "tenant_id": r["tenant_id"],
            "currency": r["currency"],
            "status": st.CONTROL_TOTALS,
            "amount_cents": r["accepted_cents"] - r["amqp_cents"],
            "detail": totals_detail(r),
        }
        for r in broken
    ]
    return pa.Table.from_pylist(rows, schema=schema)

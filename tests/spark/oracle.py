"""An independent, plain-Python reconciliation of snapshot rows: the reference for property tests.

Written from the precedence in docs/reconciliation.md, without looking at how the Spark job computes it.
"""

from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

Rows = dict[str, list[dict[str, Any]]]


def message_status(mid: str, rows: Rows, as_of: datetime, grace: timedelta) -> str | None:
    out = [r for r in rows["outbox"] if r["message_id"] == mid]
    led = [r for r in rows["ledger"] if r["message_id"] == mid]
    pm = [r for r in rows["processed_messages"] if r["message_id"] == mid]
    dead = [r for r in rows["dead_letters"] if r["message_id"] == mid and r["status"] != "replayed"]
    if led and not out:
        return "unexpected"
    if led and any((r["amount_cents"], r["currency"]) != (out[0]["amount_cents"], out[0]["currency"]) for r in led):
        return "mismatch"
    if len(led) > 1:
        return "duplicate"
    if led:
        return "processed"
    if not out:
        return None
    if any(r["reason"] != "expired" for r in dead):
        return "dead_lettered"
    if dead:
        return "expired"
    if pm:
        return "missing"
    return "in_flight" if as_of < out[0]["expires_at"] + grace else "missing"


def statuses(rows: Rows, as_of: datetime, grace: timedelta) -> dict[str, str | None]:
    ids = {r["message_id"] for table in ("outbox", "ledger", "processed_messages", "dead_letters") for r in rows[table]}
    return {m: message_status(m, rows, as_of, grace) for m in ids}


def group_states(
    rows: Rows, totals: list[dict[str, Any]], as_of: datetime, grace: timedelta
) -> dict[tuple[str, str], str]:
    """State per (correlation_id, currency) for accepted or unexpected messages and control totals."""
    by_id = statuses(rows, as_of, grace)
    accepted = {r["message_id"]: r for r in rows["outbox"]}
    first_booking: dict[str, dict[str, Any]] = {}
    for r in sorted(rows["ledger"], key=lambda r: r["booked_at"]):
        first_booking.setdefault(r["message_id"], r)
    counts: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for m, status in by_id.items():
        if status is None:
            continue
        src = accepted.get(m) or first_booking[m]
        key = (src["correlation_id"], src["currency"])
        counts[key][status] += 1
        if m in accepted:
            counts[key]["accepted"] += 1
            counts[key]["accepted_cents"] += src["amount_cents"]
    totals_by_key = {(t["correlation_id"], t["currency"]): t for t in totals}
    states: dict[tuple[str, str], str] = {}
    for key in set(counts) | set(totals_by_key):
        c, t = counts[key], totals_by_key.get(key)
        if t is None:
            totals_ok = c["accepted"] == 0
        else:
            totals_ok = (t["accepted_count"], t["accepted_cents"]) == (c["accepted"], c["accepted_cents"]) and (
                t["control_count"] in (None, t["accepted_count"]) and t["control_cents"] in (None, t["accepted_cents"])
            )
        broken = any(c[s] for s in ("unexpected", "mismatch", "duplicate", "missing")) or not totals_ok
        states[key] = "BREAKS" if broken else "PENDING" if c["in_flight"] else "RECONCILED"
    return states

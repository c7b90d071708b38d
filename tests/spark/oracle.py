"""An independent, plain-Python reconciliation of snapshot rows: the reference for property tests.

Written from the precedence in docs/reconciliation.md, without looking at how the Spark job computes it.
"""

from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

Rows = dict[str, list[dict[str, Any]]]
Key = tuple[str, str]  # a message: (tenant_id, message_id)
Group = tuple[str, str, str]  # (correlation_id, tenant_id, currency)


def key_of(row: dict[str, Any]) -> Key:
    return row["tenant_id"], row["message_id"]


def _of(table: str, key: Key, rows: Rows) -> list[dict[str, Any]]:
    return [r for r in rows.get(table, []) if key_of(r) == key]


def accepted_as(key: Key, rows: Rows) -> dict[str, Any] | None:
    """What was accepted for the message: its outbox row, else its direct publish's record, else nothing."""
    direct = [r for r in _of("processed_messages", key, rows) if r.get("source") == "amqp"]
    found = _of("outbox", key, rows) or direct
    return found[0] if found else None


def message_status(key: Key, rows: Rows, as_of: datetime, grace: timedelta, three_way: bool = False) -> str | None:
    out, led, pm = (_of(t, key, rows) for t in ("outbox", "ledger", "processed_messages"))
    dead = [r for r in _of("dead_letters", key, rows) if r["status"] != "replayed"]
    accepted = accepted_as(key, rows)
    # remit's record of a transfer an external core booked: the core's id beside the idempotency record.
    core_ids = [r["core_transfer_id"] for r in pm if r.get("core_transfer_id")]
    # The core's transfers under the key: those by the as-of time, or later ones remit already recorded.
    core = [r for r in _of("core_journal", key, rows) if r["booked_at"] <= as_of or core_ids] if three_way else []
    # Two transfers under one key, whenever the core booked them: the core moved the money twice, whatever else.
    if three_way and len({r["transfer_id"] for r in _of("core_journal", key, rows)}) > 1:
        return "core_duplicate"
    if (led or core_ids) and accepted is None:
        return "unexpected"
    accepted_money = (accepted or {}).get("amount_cents"), (accepted or {}).get("currency")
    if led and any((r["amount_cents"], r["currency"]) != accepted_money for r in led):
        return "mismatch"
    # One ledger row whose record names the core's transfer is remit's copy of it; without that name, a ledger
    # row and a transfer in the core are two bookings.
    if len(led) > 1 or (led and core and not core_ids):
        return "duplicate"
    if three_way:
        # Booked in the core, nothing in remit yet, still inside TTL: the redelivery will record it.
        resolving = bool(out) and not pm and not dead and as_of < out[0]["expires_at"] + grace
        if core and not core_ids and not resolving:
            return "core_only"
        if core_ids and not core:
            return "remit_only"
        if core_ids and (core[0]["amount_cents"], core[0]["currency"], core[0]["transfer_id"]) != (
            *accepted_money, core_ids[0]
        ):  # fmt: skip
            return "core_mismatch"
    if led or core_ids:
        return "processed"
    if accepted is None:
        return None
    if any(r["reason"] != "expired" for r in dead):
        return "dead_lettered"
    if dead:
        return "expired"
    if pm:
        return "missing"
    return "in_flight" if as_of < out[0]["expires_at"] + grace else "missing"


def statuses(rows: Rows, as_of: datetime, grace: timedelta, three_way: bool = False) -> dict[Key, str | None]:
    tables = ("outbox", "ledger", "processed_messages", "dead_letters", "core_journal")
    keys = {key_of(r) for table in tables for r in rows.get(table, [])}
    return {k: message_status(k, rows, as_of, grace, three_way) for k in keys}


BREAKS = (
    "core_duplicate",
    "unexpected",
    "mismatch",
    "duplicate",
    "core_only",
    "remit_only",
    "core_mismatch",
    "missing",
)


def _group_counts(rows: Rows, as_of: datetime, grace: timedelta, three_way: bool) -> dict[Group, dict[str, int]]:
    by_key = statuses(rows, as_of, grace, three_way)
    first_booking: dict[Key, dict[str, Any]] = {}
    for r in sorted(rows["ledger"], key=lambda r: r["booked_at"]):
        first_booking.setdefault(key_of(r), r)
    counts: dict[Group, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for m, status in by_key.items():
        if status is None:
            continue
        accepted = accepted_as(m, rows)
        # A transfer only the core has (under a key remit never accepted) belongs to no batch of remit's.
        src = accepted or first_booking.get(m) or {**_of("core_journal", m, rows)[0], "correlation_id": None}
        key = (src["correlation_id"], src["tenant_id"], src["currency"])
        counts[key][status] += 1
        if accepted is not None and accepted.get("source") != "amqp":  # direct publishes have no file totals
            counts[key]["accepted"] += 1
            counts[key]["accepted_cents"] += src["amount_cents"]
    return counts


def totals_agree(
    rows: Rows, totals: list[dict[str, Any]], as_of: datetime, grace: timedelta, three_way: bool = False
) -> dict[Group, bool]:
    """Per group: whether its control totals agree with what was accepted from its file."""
    counts = _group_counts(rows, as_of, grace, three_way)
    totals_by_key = {(t["correlation_id"], t["tenant_id"], t["currency"]): t for t in totals}
    agree: dict[Group, bool] = {}
    for key in set(counts) | set(totals_by_key):
        c, t = counts[key], totals_by_key.get(key)
        if t is None:
            agree[key] = c["accepted"] == 0
        else:
            agree[key] = (t["accepted_count"], t["accepted_cents"]) == (c["accepted"], c["accepted_cents"]) and (
                t["control_count"] in (None, t["accepted_count"]) and t["control_cents"] in (None, t["accepted_cents"])
            )
    return agree


def group_states(
    rows: Rows, totals: list[dict[str, Any]], as_of: datetime, grace: timedelta, three_way: bool = False
) -> dict[Group, str]:
    """State per (correlation_id, tenant_id, currency) for accepted or unexpected messages and control totals."""
    counts = _group_counts(rows, as_of, grace, three_way)
    states: dict[Group, str] = {}
    for key, totals_ok in totals_agree(rows, totals, as_of, grace, three_way).items():
        c = counts[key]
        broken = any(c[s] for s in BREAKS) or not totals_ok
        states[key] = "BREAKS" if broken else "PENDING" if c["in_flight"] else "RECONCILED"
    return states


def batch_states(states: dict[Group, str]) -> dict[tuple[str, str], str]:
    """Per (correlation_id, tenant_id): the worst state of its currencies. Another tenant's rows naming the
    same batch id form a batch of that tenant's."""
    severity = ("RECONCILED", "PENDING", "BREAKS")
    worst: dict[tuple[str, str], str] = {}
    for (corr, tenant, _), state in states.items():
        worst[corr, tenant] = max(worst.get((corr, tenant), "RECONCILED"), state, key=severity.index)
    return worst

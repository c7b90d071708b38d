"""How `remit dlq` shows things: tables for people (app/cli/listing.py's rules), JSON and CSV for programs."""

import json
from collections.abc import Sequence
from dataclasses import fields
from datetime import datetime
from typing import Any

from rich.console import Group
from rich.panel import Panel
from rich.table import Table

from app.cli.listing import free, keep, number, records, union
from app.cli.listing import to_json as to_json
from app.cli.safe_console import line, styled
from app.deadletters.audit import AuditEntry
from app.deadletters.replay import ReplayOutcome
from app.deadletters.requests import RequestEntry
from app.deadletters.review import DeadLetterDetail, DeadLetterStats, DeadLetterSummary, StatRow
from contracts.amounts import amount_cell, amount_text

SECURITY = ("SECURITY", "bold red")
OPTIONAL_FACTS = {"claimed tenant", "replay of"}  # shown only when there is one


def _cell(value: object) -> str:
    # Dead letters carry arbitrary text: the CLI's console parses no markup and shows control characters
    # escaped (app/cli/safe_console.py), so a cell is the value as it is.
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def list_table(rows: Sequence[DeadLetterSummary]) -> Table:
    flagged = any(r.security_event for r in rows)
    table = Table(
        number("id"),
        keep("tenant"),
        keep("batch"),
        keep("reference"),
        number("amount (minor units)"),
        keep("cur"),
        keep("reason"),
        keep("error"),
        number("tries"),
        keep("failed"),
        keep("status"),
        *([keep("flag")] if flagged else []),
        title=f"dead letters ({len(rows)}, newest first; amounts in the currency's unit, minor units beside them)",
    )
    for r in rows:
        values = (r.dead_letter_id, r.tenant_id, r.correlation_id, r.payment_reference)
        amount = amount_cell(r.amount_cents, r.currency)
        rest = (r.currency, r.reason, r.error_type, r.attempts, r.last_failed_at, r.status)
        flag = [styled(*SECURITY) if r.security_event else ""] if flagged else []
        table.add_row(*map(_cell, values), amount, *map(_cell, rest), *flag)
    return table


LIST_FIELDS = [f.name for f in fields(DeadLetterSummary)]


def detail_view(d: DeadLetterDetail) -> Group:
    s = d.summary
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold")
    facts.add_column()
    for name, value in _facts(d):
        if value is not None or name not in OPTIONAL_FACTS:
            facts.add_row(name, _cell(value))
    if s.security_event:
        facts.add_row("security event", line(SECURITY, f": {_security_note(d)}"))
    body = d.body_text if d.body_json is None else json.dumps(d.body_json, indent=2)
    note = " (account numbers masked; --unmask shows them)" if d.masked else ""
    parts: list[Any] = [
        Panel(facts, title=f"dead letter {s.dead_letter_id}"),
        Panel(body, title=f"body{note}{_cut_note(d)}"),
        Panel(json.dumps(d.headers, indent=2, default=str), title="headers"),
    ]
    if d.claims:
        claims = json.dumps(d.claims, indent=2, default=str)
        parts.append(Panel(claims, title="claims (remit-* headers from an untrusted publisher; not believed)"))
    if d.attempt_history:
        history = Table("attempt", "outcome", "error", "queue", "at", title="attempt history")
        for a in d.attempt_history:
            history.add_row(*map(_cell, (a.attempt, a.outcome, f"{a.error_type}: {a.error_message}", a.queue, a.at)))
        parts.append(history)
    if d.audit:
        parts.append(audit_table(d.audit))
    return Group(*parts)


def _facts(d: DeadLetterDetail) -> list[tuple[str, object]]:
    s = d.summary
    return [
        ("tenant", f"{s.tenant_id or '(none)'} (decided by: {d.tenant_basis})"),
        ("published by", s.published_by or "(no user_id)"),
        ("claimed tenant", d.claimed_tenant),
        ("batch", s.correlation_id),
        ("message_id", s.message_id),
        ("payment", f"{s.payment_reference or '?'}: {amount_text(s.amount_cents, s.currency) or '?'}"),
        ("status", f"{s.status} (since {_cell(d.status_changed_at)})"),
        ("reason", s.reason),
        ("error", f"{s.error_type or ''}: {d.error_message or ''}"),
        ("attempts", s.attempts),
        ("first failed", s.first_failed_at),
        ("last failed", s.last_failed_at),
        ("original queue", d.original_queue),
        ("replay of", d.replay_of),
        ("archived", d.archived_at),
        ("body", f"{d.body_length} bytes, sha256 {d.body_sha256}" + (" (truncated)" if d.body_truncated else "")),
    ]


def _security_note(d: DeadLetterDetail) -> str:
    if d.summary.reason == "tenant_mismatch":
        return "its publisher may not pay for the tenant it names; never replayable"
    if d.claimed_tenant:
        return f"its bytes claim tenant {d.claimed_tenant}"
    return "its publisher sent remit-* headers of its own (see claims)"


def _cut_note(d: DeadLetterDetail) -> str:
    if not d.body_truncated:
        return ""
    return f" (TRUNCATED: the first {d.body_kept} of {d.body_length} bytes; never replayable)"


def stats_view(stats: DeadLetterStats) -> Group | str:
    status = stats.status or "any status"
    if not stats.total:
        return f"no dead letters ({status})"
    tables: list[Any] = [
        _stat_table(f"{status}: value at risk per currency", "", stats.total),
        _stat_table("by reason", "reason", stats.by_reason),
        _stat_table("by tenant", "tenant", stats.by_tenant),
        _stat_table("by age (since last failure)", "age", stats.by_age),
    ]
    if stats.security_events:
        tables.insert(
            0, line(SECURITY, f": {stats.security_events} of these are security events (`remit dlq list` flags them)")
        )
    return Group(*tables)


def _stat_table(title: str, group: str, rows: Sequence[StatRow]) -> Table:
    columns = [keep("currency"), number("count"), number("amount (minor units)")]
    table = Table(*([keep(group)] if group else []), *columns, title=title)
    for r in rows:
        cells = [r.currency or "(unreadable)", f"{r.count:,}", amount_cell(r.amount_cents, r.currency)]
        table.add_row(*([_cell(r.group)] if group else []), *cells)
    return table


STAT_FIELDS = ["by", "group", "currency", "count", "amount_cents"]


def stat_records(stats: DeadLetterStats) -> list[dict[str, Any]]:
    """Value at risk as one table: `by` says which grouping a row is of (total, reason, tenant, age)."""
    groupings = {"total": stats.total, "reason": stats.by_reason, "tenant": stats.by_tenant, "age": stats.by_age}
    return [{"by": by, **row} for by, rows in groupings.items() for row in records(rows)]


def replay_table(outcomes: Sequence[ReplayOutcome], dry_run: bool) -> Table:
    table = Table(
        number("id"),
        keep("message_id"),
        keep("outcome"),
        free("why"),
        title="replay (dry run: nothing changed)" if dry_run else "replay",
    )
    styles = {"replayed": "green", "resolved": "cyan", "refused": "red"}
    for o in outcomes:
        action = styled(o.action, styles.get(o.action, "yellow"))
        table.add_row(_cell(o.dead_letter_id), _cell(o.message_id), action, _cell(o.detail))
    return table


def audit_table(entries: Sequence[AuditEntry]) -> Table:
    table = Table(
        keep("at"),
        keep("actor"),
        keep("action"),
        number("dead letter"),
        keep("tenant"),
        free("why"),
        free("outcome"),
        keep("dry run"),
        number("request"),
        title="audit trail",
    )
    for e in entries:
        values = (e.at, e.actor, e.action, e.dead_letter_id, e.tenant_id, e.why, e.outcome, _yes(e.dry_run))
        table.add_row(*map(_cell, (*values, e.request_id)))
    return table


def requests_table(entries: Sequence[RequestEntry]) -> Table:
    table = Table(
        number("request"),
        keep("at"),
        keep("actor"),
        keep("tenant"),
        free("ids"),
        free("filters"),
        keep("all"),
        keep("force"),
        keep("dry run"),
        free("why"),
        free("outcome"),
        title="replay requests",
    )
    for r in entries:
        filters = " ".join(f"{k}={v}" for k, v in r.filters.items())
        ids = ", ".join(map(str, r.dead_letter_ids))
        values = (r.request_id, r.at, r.actor, r.tenant_id, ids, filters, _yes(r.everything), _yes(r.force))
        table.add_row(*map(_cell, (*values, _yes(r.dry_run), r.why, r.outcome)))
    return table


def audit_csv(
    requests: Sequence[RequestEntry], entries: Sequence[AuditEntry]
) -> tuple[list[str], list[dict[str, Any]]]:
    """The trail as one CSV: `record` is `request` (a replay request as asked) or `entry` (what happened to one
    dead letter)."""
    return union(
        ("request", [f.name for f in fields(RequestEntry)], records(requests)),
        ("entry", [f.name for f in fields(AuditEntry)], records(entries)),
    )


def _yes(flag: bool) -> str:
    return "yes" if flag else ""

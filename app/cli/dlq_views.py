"""How `remit dlq` shows things: rich tables for people, plain JSON for scripts."""

import json
from collections.abc import Sequence
from dataclasses import asdict, is_dataclass
from datetime import datetime
from typing import Any

from rich.console import Group
from rich.panel import Panel
from rich.table import Table

from app.cli.safe_console import line, styled
from app.deadletters.audit import AuditEntry
from app.deadletters.replay import ReplayOutcome
from app.deadletters.requests import RequestEntry
from app.deadletters.review import DeadLetterDetail, DeadLetterStats, DeadLetterSummary, StatRow

SECURITY = ("SECURITY", "bold red")
OPTIONAL_FACTS = {"claimed tenant", "replay of"}  # shown only when there is one


def to_json(value: Any) -> str:
    return json.dumps(value, default=_plain, indent=2)


def _plain(value: object) -> object:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)  # UUIDs


def _cell(value: object) -> str:
    # Dead letters carry arbitrary text: the CLI's console parses no markup and shows control characters
    # escaped (app/cli/safe_console.py), so a cell is the value as it is.
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def list_table(rows: Sequence[DeadLetterSummary]) -> Table:
    table = Table(title=f"dead letters ({len(rows)}, newest first; amounts in minor units)")
    for column in (
        "id",
        "tenant",
        "batch",
        "reference",
        "amount",
        "cur",
        "reason",
        "error",
        "tries",
        "failed",
        "status",
        "flag",
    ):
        # Ids are folded onto a second line rather than cut: they are what people copy into the next command.
        table.add_column(column, justify="right" if column in {"id", "amount", "tries"} else "left", overflow="fold")
    for r in rows:
        table.add_row(
            *map(
                _cell,
                (
                    r.dead_letter_id,
                    r.tenant_id,
                    r.correlation_id,
                    r.payment_reference,
                    r.amount_cents,
                    r.currency,
                    r.reason,
                    r.error_type,
                    r.attempts,
                    r.last_failed_at,
                    r.status,
                ),
            ),
            styled(*SECURITY) if r.security_event else "",
        )
    return table


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
        ("payment", f"{s.payment_reference or '?'}: {s.amount_cents or '?'} {s.currency or ''}"),
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
    table = Table(title=title)
    if group:
        table.add_column(group)
    for column in ("currency", "count", "amount (minor units)"):
        table.add_column(column, justify="left" if column == "currency" else "right")
    for r in rows:
        cells = [r.currency or "(unreadable)", r.count, r.amount_cents]
        table.add_row(*map(_cell, [r.group, *cells] if group else cells))
    return table


def replay_table(outcomes: Sequence[ReplayOutcome], dry_run: bool) -> Table:
    table = Table(
        "id", "message_id", "outcome", "why", title="replay (dry run: nothing changed)" if dry_run else "replay"
    )
    styles = {"replayed": "green", "resolved": "cyan", "refused": "red"}
    for o in outcomes:
        action = styled(o.action, styles.get(o.action, "yellow"))
        table.add_row(_cell(o.dead_letter_id), _cell(o.message_id), action, _cell(o.detail))
    return table


def audit_table(entries: Sequence[AuditEntry]) -> Table:
    table = Table(
        "at", "actor", "action", "dead letter", "tenant", "why", "outcome", "dry run", "request", title="audit trail"
    )
    for e in entries:
        values = (e.at, e.actor, e.action, e.dead_letter_id, e.tenant_id, e.why, e.outcome, _yes(e.dry_run))
        table.add_row(*map(_cell, (*values, e.request_id)))
    return table


def requests_table(entries: Sequence[RequestEntry]) -> Table:
    table = Table(
        "request",
        "at",
        "actor",
        "tenant",
        "ids",
        "filters",
        "all",
        "force",
        "dry run",
        "why",
        "outcome",
        title="replay requests",
    )
    for r in entries:
        filters = " ".join(f"{k}={v}" for k, v in r.filters.items())
        ids = ",".join(map(str, r.dead_letter_ids))
        values = (r.request_id, r.at, r.actor, r.tenant_id, ids, filters, _yes(r.everything), _yes(r.force))
        table.add_row(*map(_cell, (*values, _yes(r.dry_run), r.why, r.outcome)))
    return table


def _yes(flag: bool) -> str:
    return "yes" if flag else ""

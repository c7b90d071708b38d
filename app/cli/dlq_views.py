"""How `remit dlq` shows things: rich tables for people, plain JSON for scripts."""

import json
from collections.abc import Sequence
from dataclasses import asdict, is_dataclass
from datetime import datetime
from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from app.deadletters.audit import AuditEntry
from app.deadletters.replay import ReplayOutcome
from app.deadletters.review import DeadLetterDetail, DeadLetterStats, DeadLetterSummary, StatRow


def to_json(value: Any) -> str:
    return json.dumps(value, default=_plain, indent=2)


def _plain(value: object) -> object:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)  # UUIDs


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return escape(str(value))  # dead letters carry arbitrary text; never let it act as rich markup


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
            )
        )
    return table


def detail_view(d: DeadLetterDetail) -> Group:
    s = d.summary
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold")
    facts.add_column()
    for name, value in (
        ("tenant", s.tenant_id),
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
    ):
        facts.add_row(name, _cell(value))
    body = d.body_text if d.body_json is None else json.dumps(d.body_json, indent=2)
    note = " (account numbers masked; --unmask shows them)" if d.masked else ""
    parts: list[Any] = [
        Panel(facts, title=f"dead letter {s.dead_letter_id}"),
        Panel(escape(body), title=f"body{note}"),
        Panel(escape(json.dumps(d.headers, indent=2, default=str)), title="headers"),
    ]
    if d.attempt_history:
        history = Table("attempt", "outcome", "error", "queue", "at", title="attempt history")
        for a in d.attempt_history:
            history.add_row(*map(_cell, (a.attempt, a.outcome, f"{a.error_type}: {a.error_message}", a.queue, a.at)))
        parts.append(history)
    if d.audit:
        parts.append(audit_table(d.audit))
    return Group(*parts)


def stats_view(stats: DeadLetterStats) -> Group | str:
    status = stats.status or "any status"
    if not stats.total:
        return f"no dead letters ({status})"
    tables = [
        _stat_table(f"{status}: value at risk per currency", "", stats.total),
        _stat_table("by reason", "reason", stats.by_reason),
        _stat_table("by tenant", "tenant", stats.by_tenant),
        _stat_table("by age (since last failure)", "age", stats.by_age),
    ]
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
        action = f"[{styles.get(o.action, 'yellow')}]{o.action}[/]"
        table.add_row(_cell(o.dead_letter_id), _cell(o.message_id), action, _cell(o.detail))
    return table


def audit_table(entries: Sequence[AuditEntry]) -> Table:
    table = Table("at", "actor", "action", "dead letter", "tenant", "why", "outcome", "dry run", title="audit trail")
    for e in entries:
        table.add_row(
            *map(
                _cell,
                (e.at, e.actor, e.action, e.dead_letter_id, e.tenant_id, e.why, e.outcome, "yes" if e.dry_run else ""),
            )
        )
    return table

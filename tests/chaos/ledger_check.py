"""The money-conservation check: what the ledger, the outbox and the dead-letter store say at quiescence.

Read as the schema owner (no row-level security), straight from the tables, with three independent
sources that must agree:

- accepted: `batch_totals` (the publisher's per-batch, per-currency totals) and `outbox` (one row per
  accepted message);
- processed: `ledger` (the money) and `processed_messages` (the idempotency records);
- dead-lettered / expired: `dead_letters` rows with status open or discarded (amounts read by the
  archiver from the dead letter's own body), every row counted: one payment's failure is one row.

Every accepted message must be in exactly one terminal state: processed (a ledger row), dead-lettered
(one open or discarded dead letter and no ledger row) or expired (the same, with reason `expired`).
A message is (tenant_id, message_id), the consumer's idempotency key: every source is matched on both.
"""

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

# How much later than the booking a dead letter of the same message may say it failed and still count
# as "failed before it was paid" (the consumer's clock vs PostgreSQL's now() at transaction start).
LATE_SLACK_SECONDS = 2.0

_MESSAGES = text(
    """
    SELECT o.message_id, o.tenant_id, o.payment_reference, o.amount_cents, o.currency,
           o.published_at IS NOT NULL AS published,
           coalesce(l.n, 0) AS booked, l.amount_cents AS ledger_cents,
           l.currency AS ledger_currency, l.payment_reference AS ledger_reference, l.booked_at,
           p.message_id IS NOT NULL AS claimed,
           d.reasons, d.last_failed_at AS dead_at, coalesce(d.n, 0) AS dead_letters
    FROM outbox o
    LEFT JOIN (
        SELECT tenant_id, message_id, count(*) AS n, sum(amount_cents) AS amount_cents, min(currency) AS currency,
               min(payment_reference) AS payment_reference, max(booked_at) AS booked_at
        FROM ledger GROUP BY tenant_id, message_id
    ) l USING (tenant_id, message_id)
    LEFT JOIN processed_messages p USING (tenant_id, message_id)
    LEFT JOIN (
        SELECT tenant_id, message_id, count(*) AS n, array_agg(reason ORDER BY last_failed_at DESC) AS reasons,
               max(last_failed_at) AS last_failed_at
        FROM dead_letters WHERE status IN ('open', 'discarded') GROUP BY tenant_id, message_id
    ) d USING (tenant_id, message_id)
    """
)

# Money by (tenant, currency) from each source on its own.
_ACCEPTED = text(
    "SELECT tenant_id, currency, sum(accepted_count) AS n, sum(accepted_cents) AS cents FROM batch_totals GROUP BY 1, 2"
)
_OUTBOX = text("SELECT tenant_id, currency, count(*) AS n, sum(amount_cents) AS cents FROM outbox GROUP BY 1, 2")
_PROCESSED = text("SELECT tenant_id, currency, count(*) AS n, sum(amount_cents) AS cents FROM ledger GROUP BY 1, 2")
# Every row counts: a payment dead-lettered twice (issue 37 A) is value at risk counted twice, and must show here.
_DEAD = text(
    """
    SELECT d.tenant_id, d.currency, (d.reason = 'expired') AS expired, count(*) AS n, sum(d.amount_cents) AS cents
    FROM dead_letters d
    WHERE d.status IN ('open', 'discarded') AND d.message_id IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.tenant_id = d.tenant_id AND l.message_id = d.message_id)
    GROUP BY 1, 2, 3
    """
)
_DOUBLE_PAID = text("SELECT tenant_id, payment_reference, count(*) AS n FROM ledger GROUP BY 1, 2 HAVING count(*) > 1")
# A ledger row booked for another tenant than the one that sent the message is a phantom too.
_PHANTOMS = text(
    "SELECT l.message_id, l.tenant_id FROM ledger l "
    "WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.tenant_id = l.tenant_id AND o.message_id = l.message_id)"
)
_CLAIMS_WITHOUT_MONEY = text(
    "SELECT p.message_id FROM processed_messages p "
    "WHERE NOT EXISTS (SELECT 1 FROM ledger l WHERE l.tenant_id = p.tenant_id AND l.message_id = p.message_id)"
)
_RETRIES = text("SELECT outcome, count(*) FROM delivery_attempts GROUP BY 1")


@dataclass(frozen=True, slots=True)
class Money:
    count: int = 0
    cents: int = 0

    def __add__(self, other: "Money") -> "Money":
        return Money(self.count + other.count, self.cents + other.cents)

    def __sub__(self, other: "Money") -> "Money":
        return Money(self.count - other.count, self.cents - other.cents)


Key = tuple[str, str]  # (tenant_id, currency)


@dataclass
class LedgerReport:
    accepted: int = 0
    processed: int = 0
    dead_lettered: Counter[str] = field(default_factory=Counter)  # by reason (expired excluded)
    expired: int = 0
    unsettled: int = 0
    unpublished: int = 0
    stale_dead_letters: int = 0  # open dead letters of messages another copy paid later (by design)
    attempts_by_outcome: dict[str, int] = field(default_factory=dict)
    money: dict[Key, dict[str, Money]] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def fail(self, message: str) -> None:
        self.violations.append(message)


async def check_ledger(conn: AsyncConnection, *, expect_settled: bool = True) -> LedgerReport:
    """Every invariant of the conservation check; violations are listed, not raised."""
    report = LedgerReport()
    messages = list((await conn.execute(_MESSAGES)).mappings())
    report.accepted = len(messages)
    for m in messages:
        _classify(report, m, expect_settled)
    for row in (await conn.execute(_DOUBLE_PAID)).mappings():
        report.fail(f"payment {row['payment_reference']} of {row['tenant_id']} is in the ledger {row['n']} times")
    for row in (await conn.execute(_PHANTOMS)).mappings():
        report.fail(f"ledger row for {row['message_id']} ({row['tenant_id']}) was never accepted")
    for row in (await conn.execute(_CLAIMS_WITHOUT_MONEY)).mappings():
        report.fail(f"{row['message_id']} has an idempotency record but no ledger row: it can never be paid")
    report.attempts_by_outcome = {str(o): int(n) for o, n in (await conn.execute(_RETRIES)).all()}
    await _conserve(conn, report, expect_settled)
    return report


def _classify(report: LedgerReport, m: Any, expect_settled: bool) -> None:
    mid = m["message_id"]
    if not m["published"]:
        report.unpublished += 1
        if expect_settled:
            report.fail(f"{mid} is still unpublished in the outbox")
    if m["booked"] > 1:  # impossible while the ledger's (tenant_id, message_id) is unique; checked anyway
        report.fail(f"{mid} is in the ledger {m['booked']} times")
    if m["booked"] != int(m["claimed"]):
        report.fail(
            f"{mid}: {m['booked']} ledger rows but idempotency record {'present' if m['claimed'] else 'absent'}"
        )
    if m["booked"]:
        report.processed += 1
        if m["dead_letters"] > 1:
            report.fail(f"{mid} ({m['tenant_id']}) is paid and has {m['dead_letters']} open dead letters")
        wrong = [
            name
            for name, ours, theirs in (
                ("amount", m["amount_cents"], m["ledger_cents"]),
                ("currency", m["currency"], m["ledger_currency"]),
                ("reference", m["payment_reference"], m["ledger_reference"]),
            )
            if ours != theirs
        ]
        if wrong:
            report.fail(f"{mid}: ledger row differs from the accepted message in {', '.join(wrong)}")
        if m["dead_letters"]:
            late = (m["dead_at"] - m["booked_at"]).total_seconds() > LATE_SLACK_SECONDS
            if late:
                report.fail(
                    f"{mid} was paid at {m['booked_at']:%H:%M:%S.%f} and dead-lettered afterwards "
                    f"({m['reasons'][0]} at {m['dead_at']:%H:%M:%S.%f}): an open dead letter for money already moved"
                )
            else:
                report.stale_dead_letters += 1
        return
    if m["dead_letters"]:
        reasons: list[str] = list(m["reasons"])
        if m["dead_letters"] > 1:
            report.fail(f"{mid} ({m['tenant_id']}) is dead-lettered {m['dead_letters']} times ({', '.join(reasons)})")
        if "expired" in reasons:
            report.expired += 1
        else:
            report.dead_lettered[reasons[0]] += 1
        return
    report.unsettled += 1
    if expect_settled:
        report.fail(f"{mid} ({m['tenant_id']}) is in no terminal state: neither paid nor dead-lettered")


async def _conserve(conn: AsyncConnection, report: LedgerReport, expect_settled: bool) -> None:
    money: dict[Key, dict[str, Money]] = {}

    def add(rows: Iterable[Any], column: str) -> None:
        for r in rows:
            slot = money.setdefault((r["tenant_id"], r["currency"]), {})
            slot[column] = slot.get(column, Money()) + Money(int(r["n"]), int(r["cents"] or 0))

    add((await conn.execute(_ACCEPTED)).mappings(), "accepted")
    add((await conn.execute(_OUTBOX)).mappings(), "outbox")
    add((await conn.execute(_PROCESSED)).mappings(), "processed")
    dead = list((await conn.execute(_DEAD)).mappings())
    add((r for r in dead if not r["expired"]), "dead_lettered")
    add((r for r in dead if r["expired"]), "expired")
    report.money = money
    for (tenant, currency), m in sorted(money.items()):
        accepted, outbox = m.get("accepted", Money()), m.get("outbox", Money())
        settled = m.get("processed", Money()) + m.get("dead_lettered", Money()) + m.get("expired", Money())
        if accepted != outbox:
            report.fail(f"{tenant}/{currency}: batch totals say {accepted}, the outbox holds {outbox}")
        if settled.cents > accepted.cents or settled.count > accepted.count:
            report.fail(
                f"{tenant}/{currency}: processed + dead-lettered + expired = {settled} exceeds accepted {accepted}"
            )
        elif expect_settled and settled != accepted:
            report.fail(
                f"{tenant}/{currency}: processed {m.get('processed', Money())} != accepted {accepted} "
                f"- dead-lettered {m.get('dead_lettered', Money())} - expired {m.get('expired', Money())}"
            )


# Damage the check must notice, each applied alone inside a savepoint that is rolled back.
_DRILLS: dict[str, tuple[list[str], str]] = {
    "lost payment (ledger row and idempotency record deleted)": (
        [
            "DELETE FROM processed_messages WHERE (tenant_id, message_id) = (SELECT tenant_id, message_id FROM ledger "
            "ORDER BY transfer_id LIMIT 1)",
            "DELETE FROM ledger WHERE transfer_id = (SELECT min(transfer_id) FROM ledger)",
        ],
        "in no terminal state",
    ),
    "double payment (the same payment booked again under another message_id)": (
        [
            "INSERT INTO ledger (message_id, tenant_id, correlation_id, payment_reference, amount_cents, currency, "
            "debtor_bsb, debtor_account, creditor_bsb, creditor_account) SELECT gen_random_uuid(), tenant_id, "
            "correlation_id, payment_reference, amount_cents, currency, debtor_bsb, debtor_account, creditor_bsb, "
            "creditor_account FROM ledger ORDER BY transfer_id LIMIT 1"
        ],
        "in the ledger 2 times",
    ),
    "amount changed in the ledger": (
        ["UPDATE ledger SET amount_cents = amount_cents + 1 WHERE transfer_id = (SELECT max(transfer_id) FROM ledger)"],
        "differs from the accepted message in amount",
    ),
    "payment booked for another tenant": (
        [
            "UPDATE ledger SET tenant_id = (SELECT tenant_id FROM tenants WHERE tenant_id <> ledger.tenant_id "
            "LIMIT 1) WHERE transfer_id = (SELECT max(transfer_id) FROM ledger)"
        ],
        "was never accepted",
    ),
    "idempotency record left without money": (
        ["DELETE FROM ledger WHERE transfer_id = (SELECT max(transfer_id) FROM ledger)"],
        "can never be paid",
    ),
    "dead letter raised after the payment": (
        [
            "INSERT INTO dead_letters (dedup_key, message_id, tenant_id, reason, body, last_failed_at) "
            "SELECT 'drill', message_id, tenant_id, 'retries_exhausted', '\\x7b7d'::bytea, "
            "booked_at + interval '1 minute' FROM ledger ORDER BY transfer_id LIMIT 1"
        ],
        "dead-lettered afterwards",
    ),
    "payment dead-lettered twice (a second row for the same failure)": (
        [
            "INSERT INTO dead_letters (dedup_key, message_id, tenant_id, reason, body, last_failed_at, amount_cents, "
            "currency) SELECT 'drill-twice', d.message_id, d.tenant_id, d.reason, d.body, d.last_failed_at, "
            "d.amount_cents, d.currency FROM dead_letters d WHERE d.status = 'open' AND NOT EXISTS "
            "(SELECT 1 FROM ledger l WHERE l.tenant_id = d.tenant_id AND l.message_id = d.message_id) "
            "ORDER BY d.dead_letter_id LIMIT 1"
        ],
        "dead-lettered 2 times",
    ),
    "message stuck in the outbox": (
        ["UPDATE outbox SET published_at = NULL WHERE outbox_id = (SELECT max(outbox_id) FROM outbox)"],
        "still unpublished",
    ),
}


async def drill(conn: AsyncConnection) -> dict[str, bool]:
    """Break the settled database in each way above (rolled back) and say whether the check noticed."""
    noticed: dict[str, bool] = {}
    transaction = await conn.begin()
    try:
        for name, (statements, symptom) in _DRILLS.items():
            savepoint = await conn.begin_nested()
            for statement in statements:
                await conn.execute(text(statement))
            report = await check_ledger(conn)
            noticed[name] = any(symptom in v for v in report.violations)
            await savepoint.rollback()
    finally:
        await transaction.rollback()
    return noticed

"""Replay: put dead letters back on the payments exchange, only when that cannot pay twice and can succeed.

Replay keeps the message_id, so the consumer's idempotency record protects against a double payment.
That protection lasts only as long as the record is kept (retention), so older messages are refused.
Each dead letter is handled in its own short transaction that locks its row: the publish (with
confirms) happens before the status change and the audit row commit; a crash in between leaves the row
open, and replaying it again publishes the same message_id, which the consumer absorbs.
"""

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from uuid import UUID

from pydantic import ValidationError
from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncConnection

from app.deadletters import audit, reasons
from app.deadletters.errors import DeadLetterNotFound, ReplayRefused
from app.deadletters.query import DeadLetterFilter, dl, get_dead_letter, set_status
from app.deadletters.republish import ReplayPublisher, fresh_body, replay_message
from app.deadletters.retention import DEFAULT_RETENTION_DAYS
from app.storage.tables import processed_messages, tenants
from app.storage.unit_of_work import UnitOfWorkFactory
from contracts import PaymentMessage

DEFAULT_REPLAY_BUDGET = 3


@dataclass(frozen=True, slots=True)
class ReplayPolicy:
    budget: int = DEFAULT_REPLAY_BUDGET
    retention_days: int = DEFAULT_RETENTION_DAYS  # idempotency retention unless the tenant sets its own


@dataclass(frozen=True, slots=True)
class ReplayRequest:
    actor: str
    dead_letter_id: int | None = None
    where: DeadLetterFilter = field(default_factory=DeadLetterFilter)
    everything: bool = False
    dry_run: bool = False
    force: bool = False
    why: str | None = None


Action = Literal["replayed", "resolved", "refused", "would replay", "would resolve"]


@dataclass(frozen=True, slots=True)
class ReplayOutcome:
    dead_letter_id: int
    message_id: UUID | None
    action: Action
    detail: str


@dataclass(frozen=True, slots=True)
class Facts:
    """What the store knows about the dead letter's message beyond its own row."""

    processed: bool
    replays_used: int
    retention: timedelta


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Literal["replay", "resolve", "refuse"]
    detail: str


@dataclass(frozen=True, slots=True)
class Readable:
    """The dead letter's body as a payment, ready to publish (retry_count reset), or why it is not one."""

    payment: PaymentMessage | None
    body: bytes | None
    problem: str | None

    @classmethod
    def of(cls, original: bytes) -> "Readable":
        try:
            body = fresh_body(original)
            return cls(PaymentMessage.from_wire(body), body, None)
        except ValidationError as exc:
            return cls(None, None, "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3]))
        except (ValueError, TypeError, RecursionError) as exc:
            return cls(None, None, f"not a JSON object ({type(exc).__name__})")


def decide(row: Any, readable: Readable, facts: Facts, force: bool, budget: int, now: datetime) -> Decision:
    """The replay rules, in order. Pure: the tests call it directly."""
    payment = readable.payment
    if row.status in (reasons.RESOLVED, reasons.DISCARDED):
        return _refuse(f"it is {row.status}; only open dead letters are replayed")
    if facts.processed:
        return Decision("resolve", "its message_id was already processed: marked resolved, not republished")
    if row.status == reasons.REPLAYED:
        return _refuse("it was replayed already and is not processed yet (a new failure is a new dead letter)")
    if row.reason == reasons.EXPIRED:
        return _refuse("expired payments are never replayed: resubmit the payment as a new batch")
    if payment is None:
        return _refuse(f"its body is not a valid payment ({readable.problem}); resubmit it fixed, or discard it")
    if row.tenant_id != payment.tenant_id:
        return _refuse(
            f"its tenant header {row.tenant_id!r} and body tenant_id {payment.tenant_id!r} differ; "
            "a replay cannot fix that: discard it"
        )
    if row.reason in reasons.PERMANENT and not force:
        return _refuse(f"{row.reason} is a permanent failure and would fail again; fix the cause, then use --force")
    origin = min(payment.timestamp_utc, row.first_failed_at)
    if now - origin >= facts.retention:
        return _refuse(
            f"the payment dates from {origin:%Y-%m-%d}, beyond the {facts.retention.days}-day idempotency "
            "retention: its processed record may have been purged, so a replay could pay twice. "
            "Check the ledger; if it was never paid, resubmit it as a new batch"
        )
    if facts.replays_used >= budget:
        return _refuse(
            f"the replay budget is used up ({facts.replays_used} of {budget} replays of this message_id): "
            "find the cause, then discard it"
        )
    if payment.is_expired(now):
        return _refuse(
            f"its TTL ran out at {payment.expires_at:%Y-%m-%d %H:%M:%S}Z and the consumer would dead-letter it "
            "as expired: resubmit the payment as a new batch"
        )
    return Decision("replay", f"republished to {payment.tenant_id}.payment with message_id {payment.message_id}")


def _refuse(detail: str) -> Decision:
    return Decision("refuse", detail)


OnOutcome = Callable[[ReplayOutcome, int], None]  # (outcome, total selected)


async def replay_dead_letters(
    uow_factory: UnitOfWorkFactory,
    publisher: ReplayPublisher,
    request: ReplayRequest,
    *,
    user_id: str,
    policy: ReplayPolicy | None = None,
    now: datetime | None = None,
    on_outcome: OnOutcome | None = None,
) -> list[ReplayOutcome]:
    """Replay one dead letter, or each one a filter selects (open ones unless a status is given)."""
    ids = await select_for_replay(uow_factory, request)
    replayer = _Replayer(uow_factory, publisher, request, user_id, policy or ReplayPolicy(), now or datetime.now(UTC))
    outcomes = []
    for dead_letter_id in ids:
        outcome = await replayer.one(dead_letter_id)
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome, len(ids))
    return outcomes


async def select_for_replay(uow_factory: UnitOfWorkFactory, request: ReplayRequest) -> list[int]:
    if request.dead_letter_id is not None:
        if request.everything or replace(request.where, tenant=None).narrows():
            raise ReplayRefused("give either a dead letter ID or filters/--all, not both")
        return [request.dead_letter_id]
    if not (request.where.narrows() or request.everything):
        raise ReplayRefused(
            "say which dead letters to replay: an ID, a filter (--reason, --tenant, --batch, --currency, "
            "--since, --until) or --all"
        )
    where = request.where if request.where.status else replace(request.where, status=reasons.OPEN)
    async with uow_factory() as uow:
        query = select(dl.dead_letter_id).where(where.where()).order_by(dl.dead_letter_id)
        return list((await uow.connection.execute(query)).scalars().all())


class _Replayer:
    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        publisher: ReplayPublisher,
        request: ReplayRequest,
        user_id: str,
        policy: ReplayPolicy,
        now: datetime,
    ) -> None:
        self._uow_factory = uow_factory
        self._publisher = publisher
        self._request = request
        self._user_id = user_id
        self._policy = policy
        self._now = now

    async def one(self, dead_letter_id: int) -> ReplayOutcome:
        request = self._request
        async with self._uow_factory() as uow:
            conn = uow.connection
            try:
                row = await get_dead_letter(conn, dead_letter_id, request.where.tenant, for_update=True)
            except DeadLetterNotFound as exc:
                return ReplayOutcome(dead_letter_id, None, "refused", str(exc))
            readable = Readable.of(row.body)
            message_id = readable.payment.message_id if readable.payment else row.message_id
            facts = await self._facts(conn, row, message_id)
            decision = decide(row, readable, facts, request.force, self._policy.budget, self._now)
            if decision.verdict == "refuse":
                return ReplayOutcome(dead_letter_id, message_id, "refused", decision.detail)
            if not request.dry_run:
                await self._apply(conn, row, readable, decision)
            await audit.record(
                conn,
                row,
                actor=request.actor,
                action=audit.REPLAY if decision.verdict == "replay" else audit.RESOLVE,
                outcome=decision.detail,
                dry_run=request.dry_run,
                why=request.why,
                message_id=message_id,
                at=self._now,
            )
            await uow.commit()
        return ReplayOutcome(dead_letter_id, message_id, _action(decision, request.dry_run), decision.detail)

    async def _facts(self, conn: AsyncConnection, row: Row[Any], message_id: UUID | None) -> Facts:
        if message_id is None:
            return Facts(False, 0, timedelta(days=self._policy.retention_days))
        processed = select(processed_messages.c.message_id).where(processed_messages.c.message_id == message_id)
        tenant_days = select(tenants.c.retention_days).where(tenants.c.tenant_id == row.tenant_id)
        days = (await conn.execute(tenant_days)).scalar_one_or_none() or self._policy.retention_days
        return Facts(
            processed=(await conn.execute(processed)).first() is not None,
            replays_used=await audit.replays_used(conn, message_id),
            retention=timedelta(days=days),
        )

    async def _apply(self, conn: AsyncConnection, row: Row[Any], readable: Readable, decision: Decision) -> None:
        if decision.verdict == "replay":
            assert readable.payment is not None
            assert readable.body is not None
            message, key = replay_message(readable.payment, readable.body, row.dead_letter_id, self._user_id, self._now)
            await self._publisher.publish(message, key)
        status = reasons.REPLAYED if decision.verdict == "replay" else reasons.RESOLVED
        await set_status(conn, row.dead_letter_id, status, self._now)


def _action(decision: Decision, dry_run: bool) -> Action:
    if decision.verdict == "replay":
        return "would replay" if dry_run else "replayed"
    return "would resolve" if dry_run else "resolved"

"""Replay: put dead letters back on the payments exchange, only when that cannot pay twice and can succeed.

Replay keeps the message_id, so the consumer's idempotency record protects against a double payment.
With an external core, what the core holds under the payment's transfer key decides the rest (asked before
anything else happens, so a dry run says exactly what a replay will do): a key it refused is refused for good,
so a forced replay opens the next key generation (app/consumer/core_keys.py), recorded before the publish, and
the consumer sends the payment under it; a key still being booked is refused; a key it booked or never saw is
sent again as it is. A new generation is opened only over a refusal the core recorded, which no later request
under that key can turn into a booking: the old key's refusal and the new key's booking never both stand for
money moved, and nothing sent under the old key can still book.
That protection lasts only as long as the record is kept (retention), so older messages are refused.
A replay publishes as the service's own login, which the consumer trusts for any tenant: so what is
replayed must belong, by the publisher's identity, to the tenant its body names. A tenant_mismatch dead
letter (the publisher was not that tenant) and a truncated one (its body is not the payment) never are.
Each dead letter is handled in its own short transaction that locks its row: the publish (with
confirms) happens before the status change and the audit row commit; a crash in between leaves the row
open, and replaying it again publishes the same message_id, which the consumer absorbs.
"""

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal
from uuid import UUID

from pydantic import ValidationError

from app.consumer.core_keys import FIRST_GENERATION, transfer_key
from app.consumer.core_outcomes import CoreAnswer, CoreKeys
from app.deadletters import audit, reasons
from app.deadletters.query import get_dead_letter
from app.deadletters.republish import ReplayPublisher, fresh_body, replay_message
from app.deadletters.requests import REFUSED, ReplayRequest, open_request, settle_request
from app.errors import CallerError, CoreStatusUnavailable, DeadLetterNotFound, ForceRefused, ReplayRefused
from app.storage.ports.dead_letters import DeadLetterRecord
from app.storage.ports.idempotency import NewKeyGeneration
from app.storage.unit_of_work import UnitOfWork, UnitOfWorkFactory
from app.tenancy.identity import LEGACY
from contracts import PaymentMessage


@dataclass(frozen=True, slots=True)
class ReplayPolicy:
    """From Settings (app/bootstrap.py: replay_policy)."""

    budget: int  # real replays per message_id
    retention_days: int  # idempotency retention unless the tenant sets its own
    # The external core's status query (REMIT_CORE_BANKING_URL where the replay runs); None: the in-process ledger.
    core: CoreKeys | None = None


Action = Literal["replayed", "resolved", "refused", "would replay", "would resolve"]


@dataclass(frozen=True, slots=True)
class ReplayOutcome:
    dead_letter_id: int
    message_id: UUID | None
    action: Action
    detail: str


@dataclass(frozen=True, slots=True)
class CoreKey:
    """What the external core holds under the payment's current transfer key, asked just before deciding."""

    generation: int  # the latest generation recorded for the payment (1: no new attempt was ever opened)
    key: str
    answer: CoreAnswer | None  # None: the core did not say (`unanswered` says why)
    unanswered: str | None = None


@dataclass(frozen=True, slots=True)
class Facts:
    """What the store knows about the dead letter's message beyond its own row."""

    processed: bool
    replays_used: int
    retention: timedelta
    core: CoreKey | None = None  # None: no external core (the in-process ledger), or nothing to ask it


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Literal["replay", "resolve", "refuse"]
    detail: str
    new_generation: int | None = None  # a replay that opens this transfer key generation first
    refused_reason: str | None = None  # ... because the core refused the key before it for good, for this reason


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


# A refusal's detail reaches the CLI and the HTTP API (the outcomes of POST /v1/dead-letters/replay) alike. Who may
# force (operators, admin keys) is told how; a tenant's key, which may not, is told who can.
FORCE = '--force (over HTTP: "force": true)'
USE_FORCE = f"use {FORCE}"
ASK_OPERATOR = "ask an operator to force the replay (a tenant's key may not)"


def decide(
    row: Any, readable: Readable, facts: Facts, force: bool, budget: int, now: datetime, *, may_force: bool = True
) -> Decision:
    """The replay rules, in order. Pure: the tests call it directly. `may_force`: whether the caller could force
    (what a refusal suggests)."""
    then = USE_FORCE if may_force else ASK_OPERATOR
    if row.status == reasons.ALREADY_PROCESSED:
        return _refuse(
            "its payment was booked before this copy was dead-lettered (remit trace shows it): nothing to replay"
        )
    if row.status in (reasons.RESOLVED, reasons.DISCARDED):
        return _refuse(f"it is {row.status}; only open dead letters are replayed")
    if refusal := _security_refusal(row, may_force):
        return _refuse(refusal)
    if row.reason == reasons.DUPLICATE_CONFLICT:  # before `processed`: the record is of another payment
        return _refuse(
            "its message_id was already used by its tenant for a different payment, so a replay would be refused "
            "again and the processed record is not this payment's: resubmit it with a new message_id"
        )
    if facts.processed:
        return Decision("resolve", "its message_id was already processed: marked resolved, not republished")
    if row.status == reasons.REPLAYED:
        return _refuse("it was replayed already and is not processed yet (a new failure is a new dead letter)")
    if refusal := _not_a_payment_of_its_tenant(row, readable):
        return _refuse(refusal)
    if row.reason in reasons.PERMANENT and not force:
        return _refuse(f"{row.reason} is a permanent failure and would fail again; fix the cause, then {then}")
    if row.tenant_basis == LEGACY and not force:
        return _refuse(
            "it was archived before publishers' identities were recorded, so its tenant is only what its "
            f"header claimed: check who sent it, then {then}"
        )
    return _limits(row, readable, facts, budget, now, force, then)


def _security_refusal(row: Any, may_force: bool) -> str | None:
    """What no force makes replayable, checked before anything else: a replay publishes as our own
    login, which the consumer trusts for any tenant."""
    if row.reason == reasons.TENANT_MISMATCH:
        return (
            f"tenant_mismatch dead letters are never replayed{f', not even with {FORCE}' if may_force else ''}: "
            "its publisher may not pay for the tenant it names (a security event). Discard it"
        )
    if row.body_truncated:
        return (
            f"its body was cut to the first {len(row.body)} of {row.body_length} bytes when it was stored, so "
            "it is not the payment: resubmit the payment as a new batch"
        )
    return None


def _not_a_payment_of_its_tenant(row: Any, readable: Readable) -> str | None:
    """Expired, malformed, or naming another tenant than the one its publisher's identity decided."""
    if row.reason == reasons.EXPIRED:
        return "expired payments are never replayed: resubmit the payment as a new batch"

    if readable.payment is None:
        return f"its body is not a valid payment ({readable.problem}); resubmit it fixed, or discard it"
    if row.tenant_id != readable.payment.tenant_id:
        return (
            f"it belongs to tenant {row.tenant_id!r} (its publisher's identity) but its body names tenant_id "
            f"{readable.payment.tenant_id!r}; a replay cannot fix that: discard it"
        )
    return None


def _limits(row: Any, readable: Readable, facts: Facts, budget: int, now: datetime, force: bool, then: str) -> Decision:
    """Retention, replay budget and TTL: a replay that could pay twice, loop, or only expire."""
    payment = readable.payment
    assert payment is not None
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
    return _at_the_core(row, payment, facts.core, force, then)


def _at_the_core(row: Any, payment: PaymentMessage, core: CoreKey | None, force: bool, then: str) -> Decision:
    """What the replay does given what the external core holds under the payment's current key."""
    republished = f"republished to {payment.tenant_id}.payment with message_id {payment.message_id}"
    if core is None:  # the in-process ledger: nothing outside remit remembers the payment
        return Decision("replay", republished)
    key, answer = core.key, core.answer
    if answer is None:
        if row.reason in _CORE_REFUSALS:
            return _refuse(
                f"the core could not be asked what it holds under key {key} ({core.unanswered}), and its refusal "
                "stands there for good unless a new key is opened: try again when the core answers"
            )
        return Decision(
            "replay",
            f"{republished}; the core could not be asked about key {key} ({core.unanswered}): the consumer sends the "
            "payment under it again, which the core answers with its recorded outcome, if it has one",
        )
    if answer.status == "in_progress":
        return _refuse(f"the core is still booking a request under key {key}: replay it once that has an outcome")
    if answer.status == "booked":
        if row.reason == reasons.CORE_KEY_CONFLICT:
            return _refuse(
                f"the core booked another transfer under key {key} (transfer {answer.transfer_id}): money moved "
                "under this message_id already, and a new key would move it again. Look at both (remit trace, "
                "the core's record), then discard it"
            )
        return Decision(
            "replay",
            f"{republished}; the core booked key {key} already (transfer {answer.transfer_id}): the consumer sends "
            "it under that key again and records the core's booking, moving no money a second time",
        )
    if answer.status == "rejected":
        refused = f"the core refused key {key} for good ({answer.reason or 'no reason given'})"
        following = transfer_key(payment.tenant_id, payment.message_id, core.generation + 1)
        if not force:
            return _refuse(
                f"{refused}: a replay under it is refused again. Fix the cause, then {then}: the payment is "
                f"sent as a new attempt under key {following}"
            )
        return Decision(
            "replay",
            f"{refused}; a new attempt under key {following} (key generation {core.generation + 1}): {republished}, "
            "same payment_reference and batch, sent to the core under the new key",
            new_generation=core.generation + 1,
            refused_reason=answer.reason,
        )
    return Decision("replay", f"{republished}; the core holds nothing under key {key}: the consumer sends it there")


# The core's refusals: recorded under the key for good (docs/core-banking.md, rule 2).
_CORE_REFUSALS = frozenset(
    {
        reasons.ACCOUNT_CLOSED,
        reasons.UNKNOWN_ACCOUNT,
        reasons.INSUFFICIENT_FUNDS,
        reasons.CURRENCY_NOT_HELD,
        reasons.PERMANENT_FAILURE,
        reasons.CORE_KEY_CONFLICT,
    }
)


def _refuse(detail: str) -> Decision:
    return Decision("refuse", detail)


OnOutcome = Callable[[ReplayOutcome, int], None]  # (outcome, total selected)


async def replay_dead_letters(
    uow_factory: UnitOfWorkFactory,
    publisher: ReplayPublisher,
    request: ReplayRequest,
    *,
    user_id: str,
    policy: ReplayPolicy,
    now: datetime | None = None,
    on_outcome: OnOutcome | None = None,
) -> list[ReplayOutcome]:
    """Replay the dead letters named by id, or each one a filter selects (open ones unless a status is
    given). The request is in the audit trail before anything happens, and so is every refusal."""
    request_id = await open_request(uow_factory, request)
    try:
        ids = await select_for_replay(uow_factory, request)
    except CallerError as exc:
        await settle_request(uow_factory, request_id, REFUSED + str(exc))
        raise
    when = now or datetime.now(UTC)
    replayer = _Replayer(uow_factory, publisher, request, request_id, user_id, policy, when)
    outcomes: list[ReplayOutcome] = []
    try:
        for dead_letter_id in ids:
            outcomes.append(await replayer.one(dead_letter_id))
            if on_outcome is not None:
                on_outcome(outcomes[-1], len(ids))
    finally:
        await settle_request(uow_factory, request_id, summary(outcomes, len(ids)))
    return outcomes


def summary(outcomes: list[ReplayOutcome], selected: int) -> str:
    counts = Counter(o.action for o in outcomes)
    done = ", ".join(f"{action}: {n}" for action, n in sorted(counts.items())) or "nothing selected"
    return done if len(outcomes) == selected else f"{done}; stopped after {len(outcomes)} of {selected}"


async def select_for_replay(uow_factory: UnitOfWorkFactory, request: ReplayRequest) -> list[int]:
    if request.force and not request.may_force:
        raise ForceRefused(
            "force is for admin keys and operators only: a tenant's key may not force a replay. Ask an operator"
        )
    if request.dead_letter_ids:
        if request.everything or replace(request.where, tenant=None).narrows():
            raise ReplayRefused("give either a dead letter ID or filters/--all, not both")
        await _ensure_visible(uow_factory, request)
        return list(dict.fromkeys(request.dead_letter_ids))
    if not (request.where.narrows() or request.everything):
        raise ReplayRefused(
            "say which dead letters to replay: an ID, a filter (--reason, --tenant, --batch, --currency, "
            "--since, --until) or --all"
        )
    where = request.where if request.where.status else replace(request.where, status=reasons.OPEN)
    async with uow_factory() as uow:
        return await uow.dead_letters.ids(where)


async def _ensure_visible(uow_factory: UnitOfWorkFactory, request: ReplayRequest) -> None:
    """DeadLetterNotFound for the first id outside the request's tenant: then nothing is replayed at all."""
    async with uow_factory() as uow:
        for dead_letter_id in request.dead_letter_ids:
            await get_dead_letter(uow.dead_letters, dead_letter_id, request.where.tenant)


class _Replayer:
    def __init__(
        self,
        uow_factory: UnitOfWorkFactory,
        publisher: ReplayPublisher,
        request: ReplayRequest,
        request_id: int,
        user_id: str,
        policy: ReplayPolicy,
        now: datetime,
    ) -> None:
        self._uow_factory = uow_factory
        self._publisher = publisher
        self._request = request
        self._request_id = request_id
        self._user_id = user_id
        self._policy = policy
        self._now = now

    async def one(self, dead_letter_id: int) -> ReplayOutcome:
        request = self._request
        async with self._uow_factory() as uow:
            try:
                row = await get_dead_letter(uow.dead_letters, dead_letter_id, request.where.tenant, for_update=True)
            except DeadLetterNotFound as exc:
                return ReplayOutcome(dead_letter_id, None, "refused", str(exc))
            readable = Readable.of(row.body)
            message_id = readable.payment.message_id if readable.payment else row.message_id
            facts = await self._facts(uow, row, message_id, readable)
            decision = decide(
                row, readable, facts, request.force, self._policy.budget, self._now, may_force=request.may_force
            )
            if decision.verdict != "refuse" and not request.dry_run:
                await self._apply(uow, row, readable, decision)
            await audit.record(
                uow.audit,
                row,
                actor=request.actor,
                action=_AUDITED[decision.verdict],
                outcome=decision.detail,
                dry_run=request.dry_run,
                why=request.why,
                message_id=message_id,
                at=self._now,
                request_id=self._request_id,
            )
            await uow.commit()
        return ReplayOutcome(dead_letter_id, message_id, _action(decision, request.dry_run), decision.detail)

    async def _facts(
        self, uow: UnitOfWork, row: DeadLetterRecord, message_id: UUID | None, readable: Readable
    ) -> Facts:
        if message_id is None:
            return Facts(False, 0, timedelta(days=self._policy.retention_days))
        # The idempotency record is the tenant's own: (tenant_id, message_id), the dead letter's identity tenant;
        # a dead letter filed under no tenant has none.
        tenant = await uow.tenants.get(row.tenant_id) if row.tenant_id is not None else None
        days = (tenant.retention_days if tenant else None) or self._policy.retention_days
        processed = row.tenant_id is not None and await uow.idempotency.is_recorded(row.tenant_id, message_id)
        return Facts(
            processed=processed,
            replays_used=await audit.replays_used(uow.audit, message_id, row.tenant_id),
            retention=timedelta(days=days),
            core=None if processed else await self._core_key(uow, row, readable),
        )

    async def _core_key(self, uow: UnitOfWork, row: DeadLetterRecord, readable: Readable) -> CoreKey | None:
        """With an external core, what it holds under the payment's current key: only for an open dead letter
        whose body is a payment of its own tenant (the others are refused before the core matters)."""
        payment, core = readable.payment, self._policy.core
        if core is None or payment is None or row.status != reasons.OPEN or row.tenant_id != payment.tenant_id:
            return None
        generations = await uow.idempotency.key_generations(payment.tenant_id, [payment.message_id])
        generation = generations.get(payment.message_id, FIRST_GENERATION)
        key = transfer_key(payment.tenant_id, payment.message_id, generation)
        try:
            answers = await core.outcomes([key])
        except CoreStatusUnavailable as exc:
            return CoreKey(generation, key, None, str(exc))
        return CoreKey(generation, key, answers[key])

    async def _apply(self, uow: UnitOfWork, row: DeadLetterRecord, readable: Readable, decision: Decision) -> None:
        if decision.verdict == "replay":
            assert readable.payment is not None
            assert readable.body is not None
            if decision.new_generation is not None:
                await self._open_generation(row, readable.payment, decision)
            message, key = replay_message(readable.payment, readable.body, row.dead_letter_id, self._user_id, self._now)
            await self._publisher.publish(message, key)
        status = reasons.REPLAYED if decision.verdict == "replay" else reasons.RESOLVED
        await uow.dead_letters.set_status(row.dead_letter_id, status, self._now)

    async def _open_generation(self, row: DeadLetterRecord, payment: PaymentMessage, decision: Decision) -> None:
        """Record the new key generation and commit it before the publish, in a transaction of its own: the
        consumer reads it when the replay arrives, and a crash before the publish leaves a generation nothing was
        sent under yet, which the next replay finds unknown to the core and sends the payment under as it is."""
        assert decision.new_generation is not None
        generation = decision.new_generation
        refused = transfer_key(payment.tenant_id, payment.message_id, generation - 1)
        opened = NewKeyGeneration(
            tenant_id=payment.tenant_id,
            message_id=payment.message_id,
            generation=generation,
            replaces_key=refused,
            refused_reason=decision.refused_reason,
            opened_by=self._request.actor,
            dead_letter_id=row.dead_letter_id,
            request_id=self._request_id,
            opened_at=self._now,
        )
        async with self._uow_factory(payment.tenant_id) as uow:
            await uow.idempotency.open_key_generation(opened)  # already there: another replay opened it, same key
            await uow.commit()


_AUDITED = {"replay": audit.REPLAY, "resolve": audit.RESOLVE, "refuse": audit.REFUSE}


def _action(decision: Decision, dry_run: bool) -> Action:
    if decision.verdict == "refuse":
        return "refused"
    if decision.verdict == "replay":
        return "would replay" if dry_run else "replayed"
    return "would resolve" if dry_run else "resolved"
